// Graph::to_dot and Graph::display: the graph as Graphviz, rendered by `dot`.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "lumen/core/error.h"
#include "lumen/core/graph.h"

namespace lumen {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string label(const Node& n) {
  std::ostringstream out;
  out << op_name(n.op);
  if (n.op == Op::Input) out << " '" << n.name << "'";
  if (n.op == Op::Constant) {
    if (n.pattern.defined()) {
      out << " " << n.pattern;
    } else {
      out << " " << n.number;
    }
  }
  if (n.op == Op::Cast) out << " to";
  if (n.axis >= 0) out << " axis " << n.axis;
  out << "\\n" << to_string(n.shape) << " " << dtype_name(n.dtype);
  return out.str();
}

// Runs a program without a shell; returns its exit status (-1 if it could not start).
int run_program(const std::vector<std::string>& argv) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::string Graph::to_dot() const {
  std::ostringstream out;
  out << "digraph lumen {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fillcolor=\"#f4f4f4\", "
         "fontname=\"Helvetica\"];\n";
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    const char* fill = n.op == Op::Input ? "#d8ecff" : n.op == Op::Constant ? "#f0f0d8" : "#f4f4f4";
    out << "  n" << i << " [label=\"" << escape(label(n)) << "\", fillcolor=\"" << fill << "\"];\n";
    for (const Edge& e : n.inputs) {
      out << "  n" << e.node << " -> n" << i;
      if (!e.view.is_contiguous()) out << " [label=\"" << escape(to_string(e.view.shape())) << "\", style=dashed]";
      out << ";\n";
    }
  }
  for (size_t k = 0; k < outputs_.size(); ++k) {
    out << "  out" << k << " [label=\"output '" << escape(outputs_[k].name) << "'\\n"
        << escape(to_string(outputs_[k].edge.view.shape())) << "\", shape=oval, fillcolor=\"#dff5df\"];\n";
    out << "  n" << outputs_[k].edge.node << " -> out" << k << ";\n";
  }
  out << "}\n";
  return out.str();
}

std::string Graph::display(const std::string& path) const { return write_dot(to_dot(), path); }

std::string dot_escape(const std::string& s) { return escape(s); }

std::string write_dot(const std::string& dot, const std::string& path) {
  auto dot_at = path.rfind('.');
  std::string ext = dot_at == std::string::npos ? "" : path.substr(dot_at + 1);
  std::string dot_path = ext == "dot" ? path : path + ".dot";
  std::string tmp = dot_path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) fail("display: cannot write ", tmp);
    f << dot;
    if (!f.good()) fail("display: writing ", tmp, " failed");
  }
  if (std::rename(tmp.c_str(), dot_path.c_str()) != 0) fail("display: cannot create ", dot_path);
  if (ext == "dot") return dot_path;
  if (ext != "svg" && ext != "png" && ext != "pdf") {
    fail("display: unknown image type '.", ext, "' in ", path, " (use .svg, .png, .pdf or .dot)");
  }
  std::string image_tmp = path + ".tmp";
  int status = run_program({"dot", "-T" + ext, "-o", image_tmp, dot_path});
  if (status != 0) {
    std::remove(image_tmp.c_str());
    return dot_path;  // Graphviz is not installed or failed: the DOT file is still there
  }
  if (std::rename(image_tmp.c_str(), path.c_str()) != 0) fail("display: cannot create ", path);
  std::remove(dot_path.c_str());
  return path;
}

}  // namespace lumen

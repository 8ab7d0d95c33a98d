#include "lumen/kernel/printer.h"

#include <sstream>

namespace lumen::kernel {

namespace {

void print_value(std::ostream& out, const Value& v) {
  switch (v->kind) {
    case ValueKind::Number: out << v->number; return;
    case ValueKind::Index: out << "(" << dtype_name(v->dtype) << ")(" << v->index << ")"; return;
    case ValueKind::Load:
      out << "b" << v->buffer << "[" << v->index << "]";
      if (!v->valid.is_const(1)) out << " if " << v->valid;
      return;
    case ValueKind::Unary:
      out << op_name(v->op) << "(";
      print_value(out, v->args[0]);
      out << ")";
      return;
    case ValueKind::Binary:
      out << op_name(v->op) << "(";
      print_value(out, v->args[0]);
      out << ", ";
      print_value(out, v->args[1]);
      out << ")";
      return;
    case ValueKind::Cast:
      out << dtype_name(v->dtype) << "(";
      print_value(out, v->args[0]);
      out << ")";
      return;
    case ValueKind::Select:
      out << "select(";
      print_value(out, v->args[0]);
      out << ", ";
      print_value(out, v->args[1]);
      out << ", ";
      print_value(out, v->args[2]);
      out << ")";
      return;
    case ValueKind::Acc: out << "acc" << v->acc; return;
    case ValueKind::Max:
      out << "max(";
      print_value(out, v->args[0]);
      out << ", ";
      print_value(out, v->args[1]);
      out << ")";
      return;
    case ValueKind::PairDot:
      out << "pair_dot(";
      for (size_t i = 0; i < 4; ++i) {
        if (i) out << ", ";
        print_value(out, v->args[i]);
      }
      out << ")";
      return;
  }
}

void print_block(std::ostream& out, const Block& block, int depth) {
  std::string pad(static_cast<size_t>(depth) * 2, ' ');
  for (const Stmt& s : block) {
    switch (s.kind) {
      case StmtKind::Loop:
        out << pad << "for " << s.var << " in [0, " << s.extent << ") " << loop_kind_name(s.loop);
        if (s.unroll_hint > 1) out << " unroll " << s.unroll_hint;
        out << ":\n";
        print_block(out, s.body, depth + 1);
        break;
      case StmtKind::AccInit:
        out << pad << "acc" << s.acc << " = " << (s.combine == Combine::Sum ? "0" : "-inf") << "  (" << dtype_name(s.dtype)
            << ")\n";
        break;
      case StmtKind::AccUpdate:
        out << pad << "acc" << s.acc << (s.combine == Combine::Sum ? " += " : " max= ");
        print_value(out, s.value);
        out << "\n";
        break;
      case StmtKind::Store:
        out << pad << "b" << s.buffer << "[" << s.index << "] = ";
        print_value(out, s.value);
        out << "\n";
        break;
      case StmtKind::Bind:
        out << pad << s.var << " = ";
        print_value(out, s.value);
        out << "  (checked < " << s.bound << ")\n";
        break;
    }
  }
}

}  // namespace

std::string to_string(const Value& v) {
  std::ostringstream out;
  print_value(out, v);
  return out.str();
}

std::string to_string(const Kernel& k) {
  std::ostringstream out;
  out << "kernel " << k.name << "(";
  for (size_t i = 0; i < k.buffers.size(); ++i) {
    out << (i ? ", " : "") << "b" << i << ": " << dtype_name(k.buffers[i].dtype) << " " << k.buffers[i].name
        << (k.buffers[i].output ? " out" : "");
  }
  out << ")\n";
  print_block(out, k.body, 1);
  return out.str();
}

}  // namespace lumen::kernel

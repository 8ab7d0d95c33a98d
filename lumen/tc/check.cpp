#include "lumen/tc/check.h"

#include <map>
#include <set>

#include "lumen/tc/diagnostic.h"
#include "lumen/tc/functions.h"

namespace lumen::tc {

namespace {

class DefChecker {
 public:
  DefChecker(const Def& def, std::string_view source) : def_(def), src_(source) {}

  void run() {
    names();
    for (const Statement& s : def_.statements) statement(s);
    for (const OutputDecl& o : def_.outputs) {
      auto it = rank_.find(o.name);
      if (it == rank_.end() || inputs_.count(o.name)) fail_at(src_, o.pos, "output '", o.name, "' is never defined by a statement");
      if (o.typed && o.dims.size() != it->second) {
        fail_at(src_, o.pos, "rank mismatch: output '", o.name, "' is declared with ", o.dims.size(), " dims but defined with ",
                it->second, " indices");
      }
    }
  }

 private:
  void declare(const std::string& name, const Pos& pos, const char* what) {
    if (!declared_.insert(name).second) fail_at(src_, pos, what, " '", name, "' is declared twice (or also names a size)");
  }

  void names() {
    std::set<std::string> sizes;
    for (const Param& p : def_.params) {
      for (const DimDecl& d : p.dims) {
        if (!d.name.empty()) sizes.insert(d.name);
      }
    }
    for (const OutputDecl& o : def_.outputs) {
      for (const DimDecl& d : o.dims) {
        if (!d.name.empty() && !sizes.count(d.name)) {
          fail_at(src_, d.pos, "size '", d.name, "' of output '", o.name, "' is not a size of any input");
        }
      }
    }
    declared_ = sizes;
    for (const Param& p : def_.params) {
      declare(p.name, p.pos, "parameter");
      if (p.scalar) scalars_.insert(p.name);
      else {
        inputs_.insert(p.name);
        rank_[p.name] = p.dims.size();
      }
    }
    std::set<std::string> outs;
    for (const OutputDecl& o : def_.outputs) {
      if (!outs.insert(o.name).second) fail_at(src_, o.pos, "output '", o.name, "' is listed twice");
      if (declared_.count(o.name)) fail_at(src_, o.pos, "output '", o.name, "' has the name of a parameter or size");
    }
  }

  void statement(const Statement& s) {
    walk(*s.rhs);
    if (declared_.count(s.tensor)) {
      fail_at(src_, s.pos, "'", s.tensor, "' is ", inputs_.count(s.tensor) ? "an input" : "a parameter or size",
              " and cannot be assigned; define a new tensor");
    }
    auto it = rank_.find(s.tensor);
    if (it != rank_.end() && it->second != s.indices.size()) {
      fail_at(src_, s.pos, "rank mismatch: ", s.tensor, " was defined with ", it->second, " indices, here with ", s.indices.size());
    }
    rank_[s.tensor] = s.indices.size();
  }

  void walk(const Ast& e) {
    if (e.kind == NodeKind::Access) access(e);
    if (e.kind == NodeKind::Call && e.args.size() != function_arity(e.text)) {
      fail_at(src_, e.pos, e.text, " takes ", function_arity(e.text), " argument", function_arity(e.text) == 1 ? "" : "s", ", got ",
              e.args.size());
    }
    for (const AstPtr& a : e.args) walk(*a);
  }

  void access(const Ast& e) {
    if (scalars_.count(e.text)) fail_at(src_, e.pos, "'", e.text, "' is a scalar; use it without indices");
    auto it = rank_.find(e.text);
    if (it == rank_.end()) {
      std::string known;
      for (const auto& [name, rank] : rank_) known += (known.empty() ? "" : ", ") + name;
      fail_at(src_, e.pos, "unknown tensor '", e.text, "' (tensors here: ", known.empty() ? "none" : known,
              "); a tensor must be a parameter or defined by an earlier statement. Functions: ", function_list());
    }
    if (it->second != e.args.size()) {
      fail_at(src_, e.span, "rank mismatch: ", e.text, " has ", it->second, " dim", it->second == 1 ? "" : "s", " but is read with ",
              e.args.size(), " ind", e.args.size() == 1 ? "ex" : "ices");
    }
  }

  const Def& def_;
  std::string_view src_;
  std::set<std::string> declared_, inputs_, scalars_;
  std::map<std::string, size_t> rank_;
};

}  // namespace

void check_def(const Def& def, std::string_view source) { DefChecker(def, source).run(); }

}  // namespace lumen::tc

#include "lumen/tc/comprehension.h"

#include <cmath>

#include "lumen/tc/check.h"
#include "lumen/tc/diagnostic.h"
#include "lumen/tc/parser.h"
#include "lumen/tc/scope.h"
#include "lumen/tc/statement.h"

namespace lumen::tc {

namespace {

std::string param_list(const Def& def) {
  std::string out;
  for (const Param& p : def.params) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

void bind_dims(const Param& p, const Tensor& t, Scope& scope, std::map<std::string, std::string>& origin) {
  if (t.rank() != p.dims.size()) {
    fail_at(scope.source, p.pos, "rank mismatch: ", p.name, " is declared with ", p.dims.size(), " dims but the tensor passed has shape ",
            to_string(t.shape()));
  }
  for (size_t d = 0; d < p.dims.size(); ++d) {
    const Expr& dim = t.shape()[d];
    if (!dim.is_const()) {
      fail_at(scope.source, p.pos, p.name, " has the dynamic dim ", dim, " (shape ", to_string(t.shape()),
              "); comprehensions need static shapes");
    }
    const DimDecl& decl = p.dims[d];
    std::string here = p.name + " (dim " + std::to_string(d) + ")";
    if (decl.name.empty()) {
      if (decl.value != dim.value()) {
        fail_at(scope.source, decl.pos, "size mismatch: ", here, " is declared ", decl.value, " but is ", dim.value());
      }
      continue;
    }
    auto [it, fresh] = scope.ints.emplace(decl.name, dim.value());
    if (fresh) origin[decl.name] = here;
    else if (it->second != dim.value()) {
      fail_at(scope.source, decl.pos, "size mismatch: ", decl.name, " is ", it->second, " from ", origin[decl.name], " but ",
              dim.value(), " from ", here);
    }
  }
}

void bind_scalar(const Param& p, double value, Scope& scope) {
  if (p.dtype == DType::I32) {
    if (value != std::trunc(value) || std::fabs(value) > 9.0e15) {
      fail_at(scope.source, p.pos, "int parameter ", p.name, " was given ", value, ", which is not an integer");
    }
    scope.ints[p.name] = static_cast<int64_t>(value);
  } else if (is_float(p.dtype)) {
    scope.floats[p.name] = FloatScalar{value, p.dtype};
  } else {
    fail_at(scope.source, p.type_pos, "scalar parameters are int or float, ", p.name, " is ", p.type_name);
  }
}

Scope bind(const Def& def, const std::string& source, const std::vector<Arg>& args) {
  Scope scope;
  scope.source = source;
  if (args.size() != def.params.size()) {
    fail_at(source, def.pos, def.name, " takes ", def.params.size(), " arguments (", param_list(def), "), got ", args.size());
  }
  std::map<std::string, std::string> origin;
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& p = def.params[i];
    if (p.scalar) {
      if (!std::holds_alternative<double>(args[i])) fail_at(source, p.pos, "argument ", i + 1, " (", p.name, ") must be a number");
      bind_scalar(p, std::get<double>(args[i]), scope);
      continue;
    }
    if (!std::holds_alternative<Tensor>(args[i]) || !std::get<Tensor>(args[i]).defined()) {
      fail_at(source, p.pos, "argument ", i + 1, " (", p.name, ") must be a tensor");
    }
    const Tensor& t = std::get<Tensor>(args[i]);
    if (scope.graph && t.graph() != scope.graph) fail_at(source, p.pos, p.name, " is in a different graph than the other tensors");
    scope.graph = t.graph();
    if (t.dtype() != p.dtype) {
      fail_at(source, p.type_pos, "type mismatch: ", p.name, " is declared ", p.type_name, " but the tensor passed is ",
              dtype_name(t.dtype()), " ", to_string(t.shape()));
    }
    bind_dims(p, t, scope, origin);
    scope.tensors[p.name] = t;
  }
  if (!scope.graph) fail_at(source, def.pos, def.name, " needs at least one tensor parameter");
  for (const OutputDecl& o : def.outputs) {
    if (!o.typed) continue;
    Shape shape;
    for (const DimDecl& d : o.dims) shape.push_back(Expr(d.name.empty() ? d.value : scope.ints.at(d.name)));
    scope.declared[o.name] = shape;
  }
  return scope;
}

void check_output(const OutputDecl& o, const Tensor& t, const Scope& scope) {
  if (!o.typed) return;
  if (t.dtype() != o.dtype) {
    fail_at(scope.source, o.type_pos, "type mismatch: output ", o.name, " is declared ", o.type_name, " but computes ", dtype_name(t.dtype()));
  }
  for (size_t d = 0; d < o.dims.size(); ++d) {
    int64_t want = o.dims[d].name.empty() ? o.dims[d].value : scope.ints.at(o.dims[d].name);
    if (t.shape()[d].value() != want) {
      fail_at(scope.source, o.dims[d].pos, "size mismatch: output ", o.name, " dim ", d, " is declared ", want, " but computes ",
              t.shape()[d].value());
    }
  }
}

}  // namespace

Comprehension::Comprehension(std::string source, Def def)
    : source_(std::make_shared<const std::string>(std::move(source))), def_(std::move(def)) {
  check_def(def_, *source_);
}

std::vector<Tensor> Comprehension::operator()(const std::vector<Arg>& args) const {
  Scope scope = bind(def_, *source_, args);
  for (const Statement& s : def_.statements) scope.tensors[s.tensor] = lower_statement(s, scope);
  std::vector<Tensor> out;
  for (const OutputDecl& o : def_.outputs) {
    check_output(o, scope.tensors.at(o.name), scope);
    out.push_back(scope.tensors.at(o.name));
  }
  return out;
}

std::vector<Tensor> Comprehension::apply(const std::vector<Tensor>& args) const {
  return (*this)(std::vector<Arg>(args.begin(), args.end()));
}

Comprehension define(const std::string& source, const std::string& name) {
  std::vector<Def> defs = parse(source);
  if (name.empty()) {
    if (defs.size() > 1) fail_at(source, defs[1].pos, "the text holds ", defs.size(), " defs; name the one to define");
    return Comprehension(source, defs[0]);
  }
  for (Def& d : defs) {
    if (d.name == name) return Comprehension(source, std::move(d));
  }
  std::string names;
  for (const Def& d : defs) names += (names.empty() ? "" : ", ") + d.name;
  fail("tc: no def named '", name, "' (the text defines ", names, ")");
}

}  // namespace lumen::tc

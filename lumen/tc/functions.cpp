#include "lumen/tc/functions.h"

#include <functional>
#include <map>

#include "lumen/core/error.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/math.h"
#include "lumen/tc/parser.h"

namespace lumen::tc {

namespace {

using Unary = std::function<Tensor(const Tensor&)>;

const std::map<std::string, Unary>& float_unary() {
  static const std::map<std::string, Unary> table = {
      {"exp", ops::exp},         {"log", ops::log},     {"exp2", ops::exp2},
      {"log2", ops::log2},       {"sqrt", ops::sqrt},   {"rsqrt", ops::rsqrt},
      {"sin", ops::sin},         {"cos", ops::cos},     {"tanh", ops::tanh},
      {"erf", ops::erf},         {"sigmoid", ops::sigmoid}, {"floor", ops::floor},
      {"ceil", ops::ceil},       {"round", ops::round}, {"reciprocal", ops::reciprocal},
      {"silu", ops::silu},       {"gelu", [](const Tensor& x) { return ops::gelu(x); }},
  };
  return table;
}

const std::map<std::string, Unary>& any_unary() {
  static const std::map<std::string, Unary> table = {{"abs", ops::abs}, {"relu", ops::relu}};
  return table;
}

bool is_cast(const std::string& name) {
  DType dtype;
  return type_from_name(name, &dtype);
}

}  // namespace

bool is_function(const std::string& name) {
  return float_unary().count(name) || any_unary().count(name) || is_cast(name) || name == "max" || name == "min" ||
         name == "select" || name == "pow";
}

size_t function_arity(const std::string& name) {
  if (name == "select") return 3;
  if (name == "max" || name == "min" || name == "pow") return 2;
  return 1;
}

bool function_needs_float(const std::string& name) { return float_unary().count(name) > 0 || name == "pow"; }

bool function_cast(const std::string& name, DType* dtype) { return type_from_name(name, dtype); }

Tensor apply_function(const std::string& name, const std::vector<Tensor>& args) {
  if (auto it = float_unary().find(name); it != float_unary().end()) return it->second(args.at(0));
  if (auto it = any_unary().find(name); it != any_unary().end()) return it->second(args.at(0));
  DType dtype;
  if (function_cast(name, &dtype)) return args.at(0).dtype() == dtype ? args[0] : args[0].cast(dtype);
  if (name == "max") return ops::maximum(args.at(0), args.at(1));
  if (name == "min") return ops::minimum(args.at(0), args.at(1));
  if (name == "pow") return ops::pow(args.at(0), args.at(1));
  if (name == "select") return ops::where(args.at(0), args.at(1), args.at(2));
  fail("tc: unknown function '", name, "'");
}

std::string function_list() {
  std::string out;
  for (const auto& [name, fn] : float_unary()) out += name + ", ";
  for (const auto& [name, fn] : any_unary()) out += name + ", ";
  return out + "max, min, pow, select, and the casts float, half, bfloat16, int, bool";
}

}  // namespace lumen::tc

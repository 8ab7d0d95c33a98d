#include "lumen/passes/precision.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "lumen/core/error.h"
#include "lumen/core/tensor.h"

namespace lumen::passes {

namespace {

// Which dims of a product of `shape` an operand read through `view` depends on.
std::vector<bool> dims_read(const View& view, const Shape& shape) {
  std::vector<Expr> probe = loop_indices(shape);
  View::Index at = view.index(probe);
  std::vector<Expr> used = expr_vars(at.index);
  for (const Expr& v : expr_vars(at.valid)) used.push_back(v);
  std::vector<bool> reads(shape.size(), false);
  for (size_t d = 0; d < shape.size(); ++d) reads[d] = std::find(used.begin(), used.end(), probe[d]) != used.end();
  return reads;
}

// A sum over `axis` of an f32 product whose operands both read that axis and
// one of which ignores a dim the other reads (an outer product summed: a
// matmul, not a sum of squares or a scaled row).
bool is_contraction(const Graph& g, const Node& reduction) {
  if (reduction.op != Op::SumReduce || reduction.dtype != DType::F32) return false;
  const Edge& in = reduction.inputs[0];
  const Node& product = g.node(in.node);
  if (product.op != Op::Mul || product.dtype != DType::F32 || !in.view.is_contiguous() || in.view.shape() != product.shape) {
    return false;
  }
  auto axis = static_cast<size_t>(reduction.axis);
  std::vector<bool> a = dims_read(product.inputs[0].view, product.shape);
  std::vector<bool> b = dims_read(product.inputs[1].view, product.shape);
  if (!a[axis] || !b[axis]) return false;
  for (size_t d = 0; d < a.size(); ++d) {
    if (a[d] != b[d]) return true;
  }
  return false;
}

// A node whose value is already exactly representable in `precision`: a
// widening cast of a value of that dtype.
bool already_rounded(const Graph& g, const Node& n, DType precision) {
  return n.op == Op::Cast && n.dtype == DType::F32 && g.node(n.inputs[0].node).dtype == precision;
}

class Rewriter {
 public:
  Rewriter(const Graph& in, DType precision, PrecisionReport& report) : in_(in), precision_(precision), report_(report) {}

  Graph run(std::vector<Edge>& outputs) {
    for (const std::string& name : in_.dim_names()) out_.dim(name);
    std::vector<bool> rounds(in_.size(), false);  // products whose operands are rounded
    for (const Node& n : in_.nodes()) {
      if (is_contraction(in_, n)) rounds[static_cast<size_t>(n.inputs[0].node)] = true;
    }
    map_.assign(in_.size(), -1);
    for (size_t i = 0; i < in_.size(); ++i) {
      Node n = in_.nodes()[i];
      for (size_t j = 0; j < n.inputs.size(); ++j) {
        n.inputs[j] = rounds[i] ? rounded(n.inputs[j]) : mapped(n.inputs[j]);
      }
      map_[i] = out_.add(std::move(n));
      if (is_contraction(in_, in_.nodes()[i])) report_.contractions.push_back(map_[i]);
    }
    for (const DimConstraint& c : in_.constraints()) out_.require(c.condition, c.message);
    for (const NamedOutput& o : in_.outputs()) out_.mark_output(tensor(mapped(o.edge)), o.name);
    for (const StateUpdate& u : in_.updates()) out_.assign(tensor(mapped(Edge{u.state, u.view})), tensor(mapped(u.value)));
    for (Edge& e : outputs) e = mapped(e);
    return std::move(out_);
  }

 private:
  Edge mapped(const Edge& e) const { return Edge{map_.at(static_cast<size_t>(e.node)), e.view}; }
  Tensor tensor(const Edge& e) { return Tensor(&out_, e.node, e.view); }

  // The operand `e` read through its view from its producer rounded once:
  // Cast(Cast(producer, precision), f32), shared by every product that reads it.
  Edge rounded(const Edge& e) {
    const Node& producer = in_.node(e.node);
    if (already_rounded(in_, producer, precision_)) return mapped(e);
    auto it = rounded_.find(e.node);
    if (it == rounded_.end()) {
      Tensor whole = tensor(Edge{map_.at(static_cast<size_t>(e.node)), View::contiguous(producer.shape)});
      Tensor narrow = whole.cast(precision_);
      Tensor wide = narrow.cast(DType::F32);
      report_.rounded.push_back(narrow.edge().node);
      it = rounded_.emplace(e.node, wide.edge().node).first;
    }
    return Edge{it->second, e.view};
  }

  const Graph& in_;
  DType precision_;
  PrecisionReport& report_;
  Graph out_;
  std::vector<NodeId> map_;             // node of `in_` -> node of `out_`
  std::map<NodeId, NodeId> rounded_;    // producer in `in_` -> its rounded f32 copy in `out_`
};

}  // namespace

DType precision_named(const std::string& name) {
  if (name == "fp32" || name == "f32") return DType::F32;
  if (name == "bf16") return DType::BF16;
  if (name == "fp16" || name == "f16") return DType::F16;
  fail("precision: unknown precision '", name, "' (available: fp32, bf16, fp16)");
}

const char* precision_name(DType precision) {
  switch (precision) {
    case DType::F32: return "fp32";
    case DType::BF16: return "bf16";
    case DType::F16: return "fp16";
    default: return "?";
  }
}

std::string PrecisionReport::to_string() const {
  std::ostringstream out;
  out << "precision " << precision_name(precision) << ": " << contractions.size() << " contraction"
      << (contractions.size() == 1 ? "" : "s") << " with " << precision_name(precision) << " operands ("
      << rounded.size() << " operand" << (rounded.size() == 1 ? "" : "s") << " rounded), accumulated in fp32; "
      << "everything else fp32\n";
  return out.str();
}

Graph reduce_precision(const Graph& graph, DType precision, std::vector<Edge>& outputs, PrecisionReport* report) {
  if (precision != DType::F32 && precision != DType::BF16 && precision != DType::F16) {
    fail("precision: cannot compute in ", dtype_name(precision), " (available: fp32, bf16, fp16)");
  }
  PrecisionReport local;
  PrecisionReport& r = report ? *report : local;
  r = PrecisionReport{};
  r.precision = precision;
  if (precision == DType::F32) return graph;
  return Rewriter(graph, precision, r).run(outputs);
}

}  // namespace lumen::passes

#include "lumen/passes/epilogue_shape.h"

#include <optional>

#include "lumen/core/simplify.h"
#include "lumen/core/tensor.h"

namespace lumen::passes {

namespace {

constexpr int64_t kMinSplitColumns = 8;

bool all_static(const Shape& shape) {
  for (const Expr& d : shape) {
    if (!d.is_const()) return false;
  }
  return true;
}

// Whether `view` reads a buffer of its base shape at the same flat position
// as each of its own points (a reshape), splitting the base's last dim into
// smaller rows: [.., 384] as [.., 6, 64] or [.., 9000, 64].
bool splits_columns(const View& view) {
  const Shape& base = view.base_shape();
  const Shape& shape = view.shape();
  if (view.has_mask() || base == shape || base.empty() || shape.empty()) return false;
  if (!all_static(base) || !all_static(shape)) return false;
  int64_t columns = base.back().value(), split = shape.back().value();
  // Rows of a few elements (a [1, 576] -> [1, 576, 1, 1] channel scale) are no head split.
  if (split < kMinSplitColumns || split >= columns || columns % split != 0) return false;
  if (!(simplify(shape_numel(base)) == simplify(shape_numel(shape)))) return false;
  std::vector<Expr> at = loop_indices(shape);
  View::Index i = view.index(at);
  return i.valid.is_const(1) && simplify(i.index) == simplify(View::contiguous(shape).index(at).index);
}

class Rewriter {
 public:
  explicit Rewriter(const Graph& in) : in_(in) {}

  Graph run(std::vector<Edge>& outputs, int* rewritten) {
    for (const std::string& name : in_.dim_names()) out_.dim(name);
    map_.assign(in_.size(), -1);
    reshaped_.assign(in_.size(), std::nullopt);
    for (size_t i = 0; i < in_.size(); ++i) {
      Node n = in_.nodes()[i];
      for (Edge& e : n.inputs) e = mapped(e);
      const Edge* source = contraction_input(n);
      if (source == nullptr) {
        bool epilogue = computes_contraction(n);
        map_[i] = out_.add(std::move(n));
        contraction_.push_back(epilogue);
        continue;
      }
      // Computed in the shape the contraction is stored in; read back through the reshape.
      Shape shape = n.shape;
      Shape stored = source->view.base_shape();
      View to_stored = View::contiguous(shape).reshape(stored);
      for (Edge& e : n.inputs) e.view = e.view.then(to_stored);
      n.shape = stored;
      NodeId id = out_.add(std::move(n));
      contraction_.push_back(true);
      map_[i] = id;
      reshaped_[i] = View::contiguous(stored).reshape(shape);
      ++count_;
    }
    for (const DimConstraint& c : in_.constraints()) out_.require(c.condition, c.message);
    for (const NamedOutput& o : in_.outputs()) out_.mark_output(tensor(mapped(o.edge)), o.name);
    for (const StateUpdate& u : in_.updates()) out_.assign(tensor(mapped(Edge{u.state, u.view})), tensor(mapped(u.value)));
    for (Edge& e : outputs) e = mapped(e);
    if (rewritten) *rewritten = count_;
    return std::move(out_);
  }

 private:
  // The input of elementwise `n` (inputs already mapped) that reads a
  // contraction, or an epilogue this pass already moved, through a reshape
  // that splits its columns; nullptr if none (or several).
  const Edge* contraction_input(const Node& n) const {
    if (!is_elementwise(n.op) || !all_static(n.shape)) return nullptr;
    const Edge* found = nullptr;
    for (const Edge& e : n.inputs) {
      if (!splits_columns(e.view) || !contraction_[static_cast<size_t>(e.node)]) continue;
      if (found) return nullptr;
      found = &e;
    }
    return found;
  }

  // Whether `n` (inputs mapped) is a contraction, or an elementwise op over
  // one in its shape: a plain read of a node that is (a bias, a scale).
  bool computes_contraction(const Node& n) const {
    if (n.op == Op::SumReduce) return out_.node(n.inputs[0].node).op == Op::Mul && n.inputs[0].view.is_contiguous();
    if (!is_elementwise(n.op)) return false;
    for (const Edge& e : n.inputs) {
      if (contraction_[static_cast<size_t>(e.node)] && e.view.is_contiguous() && out_.node(e.node).shape == n.shape) return true;
    }
    return false;
  }

  Edge mapped(const Edge& e) const {
    auto i = static_cast<size_t>(e.node);
    return Edge{map_.at(i), reshaped_[i] ? reshaped_[i]->then(e.view) : e.view};
  }
  Tensor tensor(const Edge& e) { return Tensor(&out_, e.node, e.view); }

  const Graph& in_;
  Graph out_;
  std::vector<NodeId> map_;                       // node of `in_` -> its node in `out_`
  std::vector<std::optional<View>> reshaped_;     // node of `in_` -> the reshape its moved copy is read through
  std::vector<bool> contraction_;  // node of `out_` -> computes a contraction (computes_contraction), or was moved
  int count_ = 0;
};

}  // namespace

Graph epilogues_in_contraction_shape(const Graph& graph, std::vector<Edge>& outputs, int* rewritten) {
  return Rewriter(graph).run(outputs, rewritten);
}

}  // namespace lumen::passes

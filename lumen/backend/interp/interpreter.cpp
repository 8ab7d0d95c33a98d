#include "lumen/backend/interp/interpreter.h"

#include <cmath>
#include <limits>

#include "lumen/backend/interp/edge_reader.h"
#include "lumen/backend/interp/semantics.h"
#include "lumen/core/error.h"
#include "lumen/core/int_math.h"

namespace lumen::interp {

namespace {

using Dims = std::vector<int64_t>;

Dims concrete(const Shape& shape, const Bindings& b) {
  Dims dims;
  for (const Expr& d : shape) dims.push_back(evaluate(d, b));
  return dims;
}

// What a view reads where it is padding.
Scalar zero_of(DType dtype) { return is_float(dtype) ? Scalar::of_float(0.0) : Scalar::of_int(0); }

int64_t numel(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n = checked_mul(n, d);
  return n;
}

// Calls f(flat, idx) for every element of `dims` in row-major order.
template <typename F>
void for_each_index(const Dims& dims, F&& f) {
  int64_t n = numel(dims);
  Dims idx(dims.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    f(flat, idx.data());
    for (size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
}

class Evaluator {
 public:
  Evaluator(const Graph& g, const Bindings& b) : graph_(g), bindings_(b), values_(g.size()) {}

  void evaluate_node(NodeId id, const std::map<std::string, Array>& inputs) {
    const Node& n = graph_.node(id);
    Dims dims = concrete(n.shape, bindings_);
    if (n.op == Op::Input) {
      values_[static_cast<size_t>(id)] = inputs.at(n.name);
      return;
    }
    Array out(n.dtype, dims);
    std::vector<EdgeReader> readers;
    for (const Edge& e : n.inputs) readers.emplace_back(e.view, bindings_);
    auto in = [&](size_t k) -> const Array& { return values_[static_cast<size_t>(n.inputs[k].node)]; };
    auto read = [&](size_t k, const int64_t* idx) -> Scalar {
      int64_t pos = readers[k].source(idx);
      return pos < 0 ? zero_of(in(k).dtype()) : in(k).load(pos);
    };

    if (n.op == Op::Constant) {
      if (!n.pattern.defined()) {
        for (int64_t f = 0; f < out.numel(); ++f) out.store(f, Scalar::of_float(n.number));
      } else {
        std::vector<std::string> slots;
        for (size_t d = 0; d < dims.size(); ++d) slots.push_back("i" + std::to_string(d));
        ExprProgram program(n.pattern, slots, bindings_);
        for_each_index(dims, [&](int64_t f, const int64_t* idx) { out.store(f, Scalar::of_int(program.run(idx))); });
      }
    } else if (n.op == Op::Cast || n.op == Op::Contiguous) {
      for_each_index(dims, [&](int64_t f, const int64_t* idx) { out.store(f, read(0, idx)); });
    } else if (is_unary(n.op)) {
      for_each_index(dims, [&](int64_t f, const int64_t* idx) { out.store(f, apply_unary(n.op, read(0, idx))); });
    } else if (is_binary(n.op)) {
      DType operand = graph_.node(n.inputs[0].node).dtype;
      for_each_index(dims, [&](int64_t f, const int64_t* idx) {
        out.store(f, apply_binary(n.op, operand, read(0, idx), read(1, idx)));
      });
    } else if (is_reduce(n.op)) {
      evaluate_reduce(n, dims, readers[0], in(0), out);
    } else if (n.op == Op::Gather) {
      evaluate_gather(n, dims, readers, in(0), in(1), out);
    } else {
      fail("interp: cannot evaluate ", op_name(n.op));
    }
    values_[static_cast<size_t>(id)] = std::move(out);
  }

  Array materialise(const Edge& e) const {
    const Node& n = graph_.node(e.node);
    Dims dims = concrete(e.view.shape(), bindings_);
    Array out(n.dtype, dims);
    EdgeReader reader(e.view, bindings_);
    const Array& src = values_[static_cast<size_t>(e.node)];
    for_each_index(dims, [&](int64_t f, const int64_t* idx) {
      int64_t pos = reader.source(idx);
      out.store(f, pos < 0 ? zero_of(src.dtype()) : src.load(pos));
    });
    return out;
  }

  void release(NodeId id) { values_[static_cast<size_t>(id)] = Array(); }

 private:
  void evaluate_reduce(const Node& n, const Dims& dims, const EdgeReader& reader, const Array& src, Array& out) {
    DType dtype = n.dtype;
    int64_t extent = evaluate(n.inputs[0].view.shape()[static_cast<size_t>(n.axis)], bindings_);
    auto axis = static_cast<size_t>(n.axis);
    Dims in_idx(dims.size() + 1);
    for_each_index(dims, [&](int64_t f, const int64_t* idx) {
      for (size_t d = 0, s = 0; d < in_idx.size(); ++d) in_idx[d] = d == axis ? 0 : idx[s++];
      Scalar acc = reduce_identity(n.op, dtype);
      for (int64_t k = 0; k < extent; ++k) {
        in_idx[axis] = k;
        int64_t pos = reader.source(in_idx.data());
        acc = reduce_step(n.op, dtype, acc, pos < 0 ? zero_of(src.dtype()) : src.load(pos));
      }
      out.store(f, acc);
    });
  }

  void evaluate_gather(const Node& n, const Dims& dims, const std::vector<EdgeReader>& readers, const Array& data,
                       const Array& indices, Array& out) {
    auto axis = static_cast<size_t>(n.axis);
    size_t index_rank = n.inputs[1].view.rank();
    int64_t size = evaluate(n.inputs[0].view.shape()[axis], bindings_);
    size_t data_rank = n.inputs[0].view.rank();
    Dims data_idx(data_rank), index_idx(index_rank);
    for_each_index(dims, [&](int64_t f, const int64_t* idx) {
      for (size_t k = 0; k < index_rank; ++k) index_idx[k] = idx[axis + k];
      int64_t ipos = readers[1].source(index_idx.data());
      int64_t j = ipos < 0 ? 0 : indices.load(ipos).to_int();
      if (j < 0 || j >= size) {
        fail("gather: index ", j, " is out of range for axis ", axis, " of size ", size, " (data shape ",
             to_string(n.inputs[0].view.shape()), "); indices must be in [0, ", size, ")");
      }
      for (size_t d = 0; d < axis; ++d) data_idx[d] = idx[d];
      data_idx[axis] = j;
      for (size_t d = axis + 1; d < data_rank; ++d) data_idx[d] = idx[d - 1 + index_rank];
      int64_t pos = readers[0].source(data_idx.data());
      out.store(f, pos < 0 ? zero_of(data.dtype()) : data.load(pos));
    });
  }

  const Graph& graph_;
  const Bindings& bindings_;
  std::vector<Array> values_;
};

}  // namespace

std::vector<Array> Interpreter::run(const std::map<std::string, Array>& inputs, const std::vector<Edge>& outputs,
                                    Bindings bindings) const {
  // Which nodes are needed, and the last consumer of each (to free early).
  std::vector<bool> needed(graph_.size(), false);
  std::vector<NodeId> last_use(graph_.size(), -1);
  for (const Edge& e : outputs) {
    graph_.node(e.node);  // throws for an unknown node
    needed[static_cast<size_t>(e.node)] = true;
  }
  for (size_t i = graph_.size(); i-- > 0;) {
    if (!needed[i]) continue;
    for (const Edge& e : graph_.nodes()[i].inputs) {
      needed[static_cast<size_t>(e.node)] = true;
      if (last_use[static_cast<size_t>(e.node)] < 0) last_use[static_cast<size_t>(e.node)] = static_cast<NodeId>(i);
    }
  }
  for (const Edge& e : outputs) last_use[static_cast<size_t>(e.node)] = static_cast<NodeId>(graph_.size());

  graph_.bind_inputs(inputs, needed, bindings);

  Evaluator ev(graph_, bindings);
  for (size_t i = 0; i < graph_.size(); ++i) {
    if (!needed[i]) continue;
    auto id = static_cast<NodeId>(i);
    ev.evaluate_node(id, inputs);
    for (const Edge& e : graph_.node(id).inputs) {
      if (last_use[static_cast<size_t>(e.node)] == id) ev.release(e.node);
    }
  }
  std::vector<Array> results;
  for (const Edge& e : outputs) results.push_back(ev.materialise(e));
  return results;
}

}  // namespace lumen::interp

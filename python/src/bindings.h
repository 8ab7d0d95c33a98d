// Shared pieces of the Python bindings: how a Python Tensor keeps its Graph
// alive, and the nanobind caster that lets every C++ function taking
// lumen::Tensor be bound directly.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <memory>

#include "lumen/lumen.h"
#include "lumen/train/trainer.h"

namespace lumen::python {

namespace nb = nanobind;

// The Python-side tensor: the handle plus shared ownership of its graph.
struct PyTensor {
  Tensor tensor;
  std::shared_ptr<Graph> graph;
};

// The Python-side graph.
struct PyGraph {
  std::shared_ptr<Graph> graph;
};

// Registers a graph created from Python so tensors can find their owner.
void register_graph(const std::shared_ptr<Graph>& graph);
std::shared_ptr<Graph> graph_owner(const Graph* graph);

// Shapes from Python: ints, dim names (str) or Dim objects.
Shape shape_from_python(Graph& g, const nb::handle& seq);
nb::object shape_to_python(const Shape& shape);

// numpy / DLPack <-> Array.
Array array_from_python(const nb::handle& obj, DType want, const std::string& what);
nb::object array_to_python(const Array& a);
// An Array as a DLPack capsule sharing its memory (bfloat16 kept as such), for torch.from_dlpack.
nb::object array_to_dlpack(const Array& a);

void bind_core(nb::module_& m);
void bind_ops(nb::module_& m);
void bind_runtime(nb::module_& m);
void bind_nn(nb::module_& m);
void bind_models(nb::module_& m);
void bind_io(nb::module_& m);
void bind_onnx(nb::module_& m);  // after bind_runtime
void bind_chat(nb::module_& m);  // after bind_models and bind_io
void bind_tc(nb::module_& m);
void bind_train(nb::module_& m);
void bind_dist(nb::module_& m);  // after bind_train; only with lumen/dist (LUMEN_HAVE_DIST)

// Tensors from a Tensor or a sequence of them; trainer options from keywords (bind_train.cpp).
std::vector<Tensor> tensor_list(nb::handle items);
train::TrainerOptions trainer_options(const nb::dict& kw);

}  // namespace lumen::python

namespace nanobind::detail {

template <>
struct type_caster<lumen::Tensor> {
  NB_TYPE_CASTER(lumen::Tensor, const_name("Tensor"))

  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    lumen::python::PyTensor* p = nullptr;
    if (!nanobind::try_cast<lumen::python::PyTensor*>(src, p) || p == nullptr) return false;
    value = p->tensor;
    return true;
  }

  static handle from_cpp(const lumen::Tensor& t, rv_policy, cleanup_list*) noexcept {
    try {
      return nanobind::cast(lumen::python::PyTensor{t, lumen::python::graph_owner(t.graph())}).release();
    } catch (...) {
      return handle();
    }
  }
};

}  // namespace nanobind::detail

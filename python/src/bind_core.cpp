// Bindings for lumen/core: Error, DType, Dim (Expr), Graph, Tensor primitives and views.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "lumen/core/simplify.h"

namespace lumen::python {

namespace {

Expr as_expr(const nb::handle& h) {
  if (nb::isinstance<Expr>(h)) return nb::cast<Expr>(h);
  return Expr(nb::cast<int64_t>(h));
}

std::vector<int> int_list(const nb::handle& dims) {
  std::vector<int> out;
  if (nb::isinstance<nb::int_>(dims)) return {nb::cast<int>(dims)};
  for (nb::handle d : dims) out.push_back(nb::cast<int>(d));
  return out;
}

}  // namespace

void bind_core(nb::module_& m) {
  nb::exception<Error>(m, "Error", PyExc_ValueError);

  nb::enum_<DType>(m, "DType")
      .value("float32", DType::F32)
      .value("float16", DType::F16)
      .value("bfloat16", DType::BF16)
      .value("int32", DType::I32)
      .value("bool", DType::Bool)
      .value("int8", DType::I8)
      .value("uint8", DType::U8)
      .value("int64", DType::I64)
      .value("float64", DType::F64);

  nb::class_<Expr>(m, "Dim", "A symbolic dimension (a dynamic dim or an expression of them).")
      .def("__repr__", [](const Expr& e) { return "Dim(" + to_string(e) + ")"; })
      .def("__str__", [](const Expr& e) { return to_string(e); })
      .def("__add__", [](const Expr& a, nb::handle b) { return simplify(a + as_expr(b)); })
      .def("__radd__", [](const Expr& a, nb::handle b) { return simplify(as_expr(b) + a); })
      .def("__sub__", [](const Expr& a, nb::handle b) { return simplify(a - as_expr(b)); })
      .def("__rsub__", [](const Expr& a, nb::handle b) { return simplify(as_expr(b) - a); })
      .def("__mul__", [](const Expr& a, nb::handle b) { return simplify(a * as_expr(b)); })
      .def("__rmul__", [](const Expr& a, nb::handle b) { return simplify(as_expr(b) * a); })
      .def("__floordiv__", [](const Expr& a, nb::handle b) { return simplify(a / as_expr(b)); })
      .def("__mod__", [](const Expr& a, nb::handle b) { return simplify(a % as_expr(b)); })
      .def("__eq__", [](const Expr& a, nb::handle b) {
        return nb::isinstance<Expr>(b) || nb::isinstance<nb::int_>(b) ? simplify(a) == simplify(as_expr(b)) : false;
      })
      .def("__hash__", [](const Expr& a) { return ExprHash()(simplify(a)); });

  nb::class_<PyGraph>(m, "Graph", "A static graph of primitive ops; tensors record into it, nothing runs.")
      .def("__init__",
           [](PyGraph* self) {
             new (self) PyGraph{std::make_shared<Graph>()};
             register_graph(self->graph);
           })
      .def(
          "input",
          [](PyGraph& g, const std::string& name, nb::handle shape, DType dtype) {
            return g.graph->input(name, shape_from_python(*g.graph, shape), dtype);
          },
          nb::arg("name"), nb::arg("shape"), nb::arg("dtype") = DType::F32)
      .def(
          "parameter",
          [](PyGraph& g, const std::string& name, nb::handle shape, DType dtype) {
            return g.graph->parameter(name, shape_from_python(*g.graph, shape), dtype);
          },
          nb::arg("name"), nb::arg("shape"), nb::arg("dtype") = DType::F32,
          "A weight: set like an input, but work that depends only on parameters (packing) is kept between runs.")
      .def(
          "constant",
          [](PyGraph& g, nb::handle value, DType dtype) {
            // Python ints stay exact (an int64 past 2^53 has no double).
            if (nb::isinstance<nb::int_>(value) && !nb::isinstance<nb::bool_>(value) && !is_float(dtype)) {
              return g.graph->constant_int(nb::cast<int64_t>(value), dtype);
            }
            return g.graph->constant(nb::cast<double>(value), dtype);
          },
          nb::arg("value"), nb::arg("dtype") = DType::F32)
      .def("dim", [](PyGraph& g, const std::string& name) { return g.graph->dim(name); }, nb::arg("name"))
      .def(
          "state",
          [](PyGraph& g, const std::string& name, nb::handle shape, DType dtype) {
            return g.graph->state(name, shape_from_python(*g.graph, shape), dtype);
          },
          nb::arg("name"), nb::arg("shape"), nb::arg("dtype") = DType::F32,
          "Persistent state (e.g. a KV cache): kept by the Program between runs, changed only by assign().")
      .def(
          "assign", [](PyGraph& g, const Tensor& target, const Tensor& value) { g.graph->assign(target, value); },
          nb::arg("target"), nb::arg("value"),
          "At the end of each run, the state region `target` (a view of a state tensor) takes `value`.")
      .def(
          "mark_output", [](PyGraph& g, const Tensor& t, const std::string& name) { g.graph->mark_output(t, name); },
          nb::arg("tensor"), nb::arg("name") = "")
      .def("to_dot", [](const PyGraph& g) { return g.graph->to_dot(); })
      .def("display", [](const PyGraph& g, const std::string& path) { return g.graph->display(path); }, nb::arg("path"))
      .def("__len__", [](const PyGraph& g) { return g.graph->size(); })
      .def_prop_ro("output_names", [](const PyGraph& g) {
        std::vector<std::string> names;
        for (const NamedOutput& o : g.graph->outputs()) names.push_back(o.name);
        return names;
      });

  nb::class_<PyTensor>(m, "Tensor", "A value in a Graph: a node seen through a view. Operations record nodes.")
      .def_prop_ro("shape", [](const Tensor& t) { return shape_to_python(t.shape()); })
      .def_prop_ro("dtype", [](const Tensor& t) { return t.dtype(); })
      .def_prop_ro("ndim", [](const Tensor& t) { return t.rank(); })
      .def_prop_ro("graph", [](const PyTensor& t) { return PyGraph{t.graph}; })
      .def_prop_ro("node_id", [](const Tensor& t) { return t.node_id(); })
      .def("__repr__",
           [](const Tensor& t) {
             return "lumen.Tensor(shape=" + to_string(t.shape()) + ", dtype=" + dtype_name(t.dtype()) + ", node=" +
                    std::to_string(t.node_id()) + ")";
           })
      // primitives
      .def("log2", [](const Tensor& t) { return t.log2(); })
      .def("exp2", [](const Tensor& t) { return t.exp2(); })
      .def("sin", [](const Tensor& t) { return t.sin(); })
      .def("sqrt", [](const Tensor& t) { return t.sqrt(); })
      .def("recip", [](const Tensor& t) { return t.recip(); })
      .def("cast", [](const Tensor& t, DType d) { return t.cast(d); }, nb::arg("dtype"))
      .def("contiguous", [](const Tensor& t) { return t.contiguous(); })
      .def("sum_reduce", [](const Tensor& t, int axis) { return t.sum_reduce(axis); }, nb::arg("axis"))
      .def("max_reduce", [](const Tensor& t, int axis) { return t.max_reduce(axis); }, nb::arg("axis"))
      .def("gather_axis", [](const Tensor& t, const Tensor& idx, int axis) { return t.gather(idx, axis); },
           nb::arg("indices"), nb::arg("axis") = 0)
      .def("add_", [](const Tensor& a, const Tensor& b) { return a.add(b); })
      .def("mul_", [](const Tensor& a, const Tensor& b) { return a.mul(b); })
      .def("mod_", [](const Tensor& a, const Tensor& b) { return a.mod(b); })
      .def("less_than_", [](const Tensor& a, const Tensor& b) { return a.less_than(b); })
      // views
      .def("permute_", [](const Tensor& t, nb::handle dims) { return t.permute(int_list(dims)); })
      .def("reshape_", [](const PyTensor& t, nb::handle shape) { return t.tensor.reshape(shape_from_python(*t.graph, shape)); })
      .def("expand_", [](const PyTensor& t, nb::handle shape) { return t.tensor.expand(shape_from_python(*t.graph, shape)); })
      .def("slice_", [](const Tensor& t, int dim, nb::handle b, nb::handle e, int64_t step) {
             return t.slice(dim, as_expr(b), as_expr(e), step);
           }, nb::arg("dim"), nb::arg("begin"), nb::arg("end"), nb::arg("step") = 1)
      .def("unfold", [](const Tensor& t, int dim, int64_t size, int64_t step, int64_t dilation) {
             return t.unfold(dim, size, step, dilation);
           }, nb::arg("dimension"), nb::arg("size"), nb::arg("step"), nb::arg("dilation") = 1)
      .def("unsqueeze", [](const Tensor& t, int dim) { return t.unsqueeze(dim); }, nb::arg("dim"))
      .def("transpose", [](const Tensor& t, int a, int b) { return t.transpose(a, b); }, nb::arg("dim0"), nb::arg("dim1"))
      .def("view_string", [](const Tensor& t) { return t.view().to_string(); });
}

}  // namespace lumen::python

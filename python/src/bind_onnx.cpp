// Bindings for lumen.onnx: ONNX models as lumen graphs and programs.
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "lumen/models/onnx_program.h"

namespace lumen::python {

namespace {

onnx::LoadOptions load_options(nb::handle fixed_inputs, nb::handle graph = nb::none(), const std::string& prefix = "") {
  onnx::LoadOptions o;
  if (!graph.is_none()) o.graph = nb::cast<PyGraph&>(graph).graph;
  o.prefix = prefix;
  if (fixed_inputs.is_none()) return o;
  for (auto [name, value] : nb::cast<nb::dict>(fixed_inputs)) {
    nb::object np = nb::module_::import_("numpy");
    nb::object arr = np.attr("asarray")(value);
    std::string kind = nb::cast<std::string>(arr.attr("dtype").attr("kind"));
    bool wide = nb::cast<int>(arr.attr("dtype").attr("itemsize")) == 8;  // int64 / float64 kept exact
    DType want = kind == "f" ? (wide ? DType::F64 : DType::F32) : kind == "b" ? DType::Bool : (wide ? DType::I64 : DType::I32);
    std::string key = nb::cast<std::string>(name);
    o.fixed_inputs[key] = array_from_python(arr, want, "fixed_inputs['" + key + "']").clone();
  }
  return o;
}

onnx::Model registered(onnx::Model m) {
  register_graph(m.graph);
  return m;
}

}  // namespace

void bind_onnx(nb::module_& m) {
  nb::module_ o = m.def_submodule("onnx", "ONNX models: load a .onnx file as a lumen graph, compile and run it");
  nb::class_<onnx::Model>(o, "Model", "An imported ONNX model: a lumen graph, its inputs, outputs and weights.")
      .def_ro("inputs", &onnx::Model::inputs, "Run-time input names, in the model's order.")
      .def_ro("outputs", &onnx::Model::outputs, "Output names, in the model's order.")
      .def_ro("opset", &onnx::Model::opset)
      .def_ro("producer", &onnx::Model::producer)
      .def_prop_ro("graph", [](const onnx::Model& mo) { return PyGraph{mo.graph}; })
      .def_prop_ro("weight_names", [](const onnx::Model& mo) {
        std::vector<std::string> names;
        for (const auto& w : mo.weights) names.push_back(w.first);
        return names;
      })
      .def("set_weights",
           [](const onnx::Model& mo, Program& p) {
             auto held = p.lock();
             for (const auto& [name, data] : mo.weights) {
               if (p.graph().find_input(name) >= 0) p.set(name, data);
             }
           },
           nb::arg("program"), "Sets the model's weights on a program compiled from a graph holding it.")
      .def("compile",
           [](const onnx::Model& mo, const std::string& backend, double budget, bool tuning_cache) {
             CompileOptions c;
             c.backend = backend_named(backend);
             c.search_budget_s = budget;
             c.tuning_cache = tuning_cache;
             nb::gil_scoped_release release;
             return onnx::compile(mo, c);
           },
           nb::arg("backend") = "cpu", nb::arg("budget") = 0.0, nb::arg("tuning_cache") = true,
           "Compiles the model and sets its weights: call the Program with the inputs by name.");
  o.def("load", [](const std::string& path, nb::handle fixed) { return registered(onnx::load(path, load_options(fixed))); },
        nb::arg("path"), nb::arg("fixed_inputs") = nb::none(),
        "Reads a .onnx file (external data beside it). fixed_inputs: {name: array} for graph inputs the model "
        "uses as shapes or axes, fixed at import.");
  o.def("load_bytes",
        [](nb::bytes data, nb::handle fixed, nb::handle graph, const std::string& prefix) {
          return registered(onnx::load_bytes(std::string(data.c_str(), data.size()), load_options(fixed, graph, prefix)));
        },
        nb::arg("data"), nb::arg("fixed_inputs") = nb::none(), nb::arg("graph") = nb::none(), nb::arg("prefix") = "",
        "As load, from the bytes of a model (no external data). With `graph` (a lumen.Graph), the model is added "
        "to it, its names prefixed by `prefix`, so several models compile together: lumen.compile(graph).");
}

}  // namespace lumen::python

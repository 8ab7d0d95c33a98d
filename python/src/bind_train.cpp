// Bindings for autodiff (lumen/passes) and training (lumen/train):
// _lumen.grad and _lumen.train.Trainer (python/lumen/train.py wraps it).
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "lumen/passes/autodiff.h"
#include "lumen/train/trainer.h"

namespace lumen::python {

std::vector<Tensor> tensor_list(nb::handle items) {
  std::vector<Tensor> out;
  if (nb::isinstance<PyTensor>(items)) return {nb::cast<Tensor>(items)};
  for (nb::handle t : items) out.push_back(nb::cast<Tensor>(t));
  return out;
}

train::TrainerOptions trainer_options(const nb::dict& kw) {
  train::TrainerOptions o;
  train::OptimizerConfig& c = o.optimizer;
  for (auto [key, value] : kw) {
    std::string k = nb::cast<std::string>(key);
    if (k == "optimizer") c.kind = train::optimizer_named(nb::cast<std::string>(value));
    else if (k == "lr") o.lr = nb::cast<double>(value);
    else if (k == "weight_decay") c.weight_decay = nb::cast<double>(value);
    else if (k == "momentum") c.momentum = nb::cast<double>(value);
    else if (k == "dampening") c.dampening = nb::cast<double>(value);
    else if (k == "nesterov") c.nesterov = nb::cast<bool>(value);
    else if (k == "beta1") c.beta1 = nb::cast<double>(value);
    else if (k == "beta2") c.beta2 = nb::cast<double>(value);
    else if (k == "eps") c.eps = nb::cast<double>(value);
    else if (k == "clip_norm") c.clip_norm = nb::cast<double>(value);
    else if (k == "accumulation") c.accumulation = nb::cast<int>(value);
    else if (k == "backend") o.compile.backend = backend_named(nb::cast<std::string>(value));
    else if (k == "budget_s") o.compile.search_budget_s = nb::cast<double>(value);
    else if (k == "tuning_cache") o.compile.tuning_cache = nb::cast<bool>(value);
    else if (k == "recompute") o.compile.recompute = recompute_named(nb::cast<std::string>(value));
    else if (k == "log_every") o.log_every = nb::cast<int>(value);
    else fail("Trainer: unknown option '", k, "'");
  }
  return o;
}

void bind_train(nb::module_& m) {
  m.def(
      "grad",
      [](const Tensor& loss, nb::handle wrt) { return passes::gradients(loss, tensor_list(wrt)); }, nb::arg("loss"),
      nb::arg("inputs"),
      "Gradients of the scalar `loss` with respect to each of `inputs`, appended to the same graph (reverse-mode "
      "autodiff as a graph transform): compile them together with the loss to get one forward+backward Program.");

  nb::module_ t = m.def_submodule("train", "Training: optimizers as graphs, the trainer, checkpoints.");
  nb::class_<train::Trainer>(t, "Trainer")
      .def("__init__",
           [](train::Trainer* self, PyGraph& g, const Tensor& loss, nb::handle params, const nb::dict& kw) {
             std::vector<Tensor> ps = tensor_list(params);
             train::TrainerOptions options = trainer_options(kw);
             nb::gil_scoped_release release;
             new (self) train::Trainer(*g.graph, loss, ps, options);
           },
           nb::arg("graph"), nb::arg("loss"), nb::arg("params"), nb::arg("options"))
      .def("step",
           [](train::Trainer& tr, const nb::dict& batch) {
             std::map<std::string, Array> arrays;
             const Graph& graph = tr.program().graph();
             for (auto [key, value] : batch) {
               std::string name = nb::cast<std::string>(key);
               NodeId id = graph.find_input(name);
               if (id < 0) fail("Trainer.step: the model has no batch input named '", name, "'");
               arrays[name] = array_from_python(value, graph.node(id).dtype, "Trainer.step('" + name + "')");
             }
             nb::gil_scoped_release release;
             return tr.step(arrays);
           },
           nb::arg("batch"))
      .def_prop_rw("lr", &train::Trainer::lr, &train::Trainer::set_lr)
      .def_prop_ro("steps", &train::Trainer::steps)
      .def_prop_ro("micro_steps", &train::Trainer::micro_steps)
      .def_prop_ro("last_loss", &train::Trainer::last_loss)
      .def_prop_ro("steps_per_second", &train::Trainer::steps_per_second)
      .def("progress_line", &train::Trainer::progress_line)
      .def("parameter", [](const train::Trainer& tr, const std::string& name) { return array_to_python(tr.parameter(name).clone()); })
      .def("set_parameter",
           [](train::Trainer& tr, const std::string& name, nb::handle value) {
             tr.set_parameter(name, array_from_python(value, DType::F32, "Trainer.set_parameter('" + name + "')"));
           })
      .def_prop_ro("parameter_names", &train::Trainer::parameter_names)
      .def_prop_ro("state_names", &train::Trainer::state_names)
      .def("save", &train::Trainer::save, nb::arg("path"))
      .def("load", &train::Trainer::load, nb::arg("path"))
      .def("report", [](train::Trainer& tr) { return tr.program().report(); })
      .def_prop_ro("stats", [](train::Trainer& tr) { return tr.program().stats(); });
}

}  // namespace lumen::python

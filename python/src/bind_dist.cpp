// Bindings for distributed execution (lumen/dist): _lumen.dist — the ranks
// mpirun started, a Llama model run under a parallel plan, data-parallel
// training, and the plan search. python/lumen/dist.py wraps it.
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <filesystem>

#include "bindings.h"
#include "lumen/dist/calibration.h"
#include "lumen/dist/data_parallel_trainer.h"
#include "lumen/dist/dist_llama_runner.h"
#include "lumen/dist/plan_search.h"
#include "lumen/io/gguf.h"
#include "lumen/models/fused_weights.h"
#include "lumen/models/llama_gguf.h"

namespace lumen::python {

namespace {

struct LoadedLlama {
  models::LlamaConfig config;
  std::shared_ptr<io::WeightStore> weights;
};

LoadedLlama load(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(path)) {
    io::GgufFile file = io::GgufFile::open(path);
    models::LlamaConfig config = models::llama_config_from_gguf(file);
    return {config, models::llama_weights_from_gguf(file, config)};
  }
  if (!fs::is_directory(path)) fail("dist: '", path, "' is neither a GGUF file nor a model directory");
  models::LlamaConfig config = models::LlamaConfig::from_directory(path);
  return {config, models::llama_weights_from_directory(path, config)};
}

struct PyDataParallel {
  std::shared_ptr<Graph> graph;
  std::unique_ptr<dist::DataParallelTrainer> trainer;
};

void bind_llama(nb::module_& d) {
  nb::class_<dist::DistLlamaRunner>(d, "Llama",
                                    "A Llama-family decoder run by every rank under one plan: 'tp' (tensor parallel) "
                                    "or 'pp' (pipeline). Every rank calls the same methods; every rank gets the logits.")
      .def("__init__",
           [](dist::DistLlamaRunner* self, const std::string& path, const std::string& parallel, int64_t capacity,
              double budget_s, bool tuning_cache, int64_t prefill_chunk) {
             LoadedLlama l = load(path);
             dist::DistLlamaOptions o;
             o.parallel = dist::llama_parallel_named(parallel);
             o.runner.capacity = capacity;
             o.runner.compile.search_budget_s = budget_s;
             o.runner.compile.tuning_cache = tuning_cache;
             o.prefill_chunk = prefill_chunk;
             nb::gil_scoped_release release;
             new (self) dist::DistLlamaRunner(l.config, l.weights, o);
           },
           nb::arg("path"), nb::arg("parallel") = "tp", nb::arg("capacity") = 0, nb::arg("budget_s") = 0.0,
           nb::arg("tuning_cache") = true, nb::arg("prefill_chunk") = 0)
      .def("forward",
           [](dist::DistLlamaRunner& r, const std::vector<int32_t>& tokens) {
             std::vector<float> logits;
             {
               nb::gil_scoped_release release;
               logits = r.forward(tokens);
             }
             return array_to_python(Array::from_floats(logits, {static_cast<int64_t>(logits.size())}));
           },
           nb::arg("tokens"))
      .def("generate",
           [](dist::DistLlamaRunner& r, const std::vector<int32_t>& prompt, int64_t max_new, double temperature, int64_t top_k,
              double top_p, uint64_t seed) {
             models::Sampler sampler({temperature, top_k, top_p, seed});
             nb::gil_scoped_release release;
             return r.generate(prompt, max_new, sampler);
           },
           nb::arg("prompt"), nb::arg("max_new_tokens") = 32, nb::arg("temperature") = 0.0, nb::arg("top_k") = 0,
           nb::arg("top_p") = 1.0, nb::arg("seed") = 0)
      .def("reset", &dist::DistLlamaRunner::reset)
      .def_prop_ro("position", &dist::DistLlamaRunner::position)
      .def_prop_ro("plan", [](const dist::DistLlamaRunner& r) { return r.spec().stages > 1 ? "pp" : "tp"; })
      .def("report", &dist::DistLlamaRunner::report);
}

void bind_trainer(nb::module_& d) {
  nb::class_<PyDataParallel>(d, "DataParallelTrainer",
                             "lumen.train's step over every rank, each on its slice (axis 0) of the batch inputs.")
      .def("__init__",
           [](PyDataParallel* self, PyGraph& g, const Tensor& loss, nb::handle params, const std::vector<std::string>& batch,
              const nb::dict& kw) {
             std::vector<Tensor> ps = tensor_list(params);
             train::TrainerOptions options = trainer_options(kw);
             new (self) PyDataParallel{g.graph, nullptr};
             nb::gil_scoped_release release;
             self->trainer = std::make_unique<dist::DataParallelTrainer>(*g.graph, loss, ps, batch, options);
           },
           nb::arg("graph"), nb::arg("loss"), nb::arg("params"), nb::arg("batch_inputs"), nb::arg("options"))
      .def("step",
           [](PyDataParallel& t, const nb::dict& batch, bool local) {
             std::map<std::string, Array> arrays;
             for (auto [key, value] : batch) {
               std::string name = nb::cast<std::string>(key);
               NodeId id = t.graph->find_input(name);
               if (id < 0) fail("DataParallelTrainer.step: the model has no batch input named '", name, "'");
               arrays[name] = array_from_python(value, t.graph->node(id).dtype, "DataParallelTrainer.step('" + name + "')");
             }
             nb::gil_scoped_release release;
             return t.trainer->step(arrays, local);
           },
           nb::arg("batch"), nb::arg("local") = false)
      .def("set_parameter",
           [](PyDataParallel& t, const std::string& name, nb::handle value) {
             t.trainer->set_parameter(name, array_from_python(value, DType::F32, "set_parameter('" + name + "')"));
           })
      .def("parameter", [](PyDataParallel& t, const std::string& name) { return array_to_python(t.trainer->parameter(name).clone()); })
      .def("report", [](PyDataParallel& t) { return t.trainer->program().report(); });
}

}  // namespace

void bind_dist(nb::module_& m) {
  nb::module_ d = m.def_submodule("dist", "Distributed execution: ranks started by mpirun, parallel plans.");
  d.def("rank", [] { return dist::world().rank(); }, "This process's rank (initialises MPI on first use).");
  d.def("size", [] { return dist::world().size(); }, "The number of ranks.");
  d.def("launched", &dist::launched_with_ranks, "True when mpirun started more than one rank.");
  d.def("barrier", [] {
    nb::gil_scoped_release release;
    dist::world().barrier("a barrier");
  });
  d.def(
      "broadcast",
      [](const std::string& text, int root) {
        nb::gil_scoped_release release;
        dist::Communicator& w = dist::world();
        int64_t size = static_cast<int64_t>(text.size());
        w.wait(*w.broadcast(&size, sizeof size, root), "a broadcast's size");
        std::string out = text;
        out.resize(static_cast<size_t>(size));
        w.wait(*w.broadcast(out.data(), size, root), "a broadcast");
        return out;
      },
      nb::arg("text"), nb::arg("root") = 0, "Every rank gets rank `root`'s text (collective).");
  d.def("abort", &dist::abort_job, nb::arg("code") = 1, "Ends every rank of the job (after a fatal error).");
  d.def(
      "plan",
      [](const std::string& model_or_preset, int ranks, int64_t prompt, int64_t position, bool calibrate) {
        dist::LlamaWorkload w;
        if (std::filesystem::exists(model_or_preset)) {
          LoadedLlama l = load(model_or_preset);
          w.config = l.config;
        } else {
          w.config = dist::llama_preset(model_or_preset);
        }
        w.prompt = prompt;
        w.position = position;
        w.capacity = std::min<int64_t>(w.config.max_position, 2048);
        nb::gil_scoped_release release;
        dist::MachineModel machine = dist::calibrate({}, dist::launched_with_ranks() ? &dist::world() : nullptr, calibrate);
        auto ranked = dist::search_llama_plans(w, ranks, machine);
        return dist::format_plans(ranked, w, machine) + "chosen: " + dist::best_runnable(ranked).name() + "\n";
      },
      nb::arg("model"), nb::arg("ranks"), nb::arg("prompt_tokens") = 128, nb::arg("position") = 128,
      nb::arg("calibrate") = true, "The plan search's table for a model directory, GGUF file or preset over `ranks`.");
  bind_llama(d);
  bind_trainer(d);
}

}  // namespace lumen::python

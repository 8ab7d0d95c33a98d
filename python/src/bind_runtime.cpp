// Bindings for compile() and Program, with numpy / DLPack in and out.
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "lumen/backend/cpu/isa.h"
#include "lumen/backend/cpu/thread_pool.h"

namespace lumen::python {

void bind_runtime(nb::module_& m) {
  nb::class_<Program>(m, "Program", "A compiled graph: set inputs, run, get outputs.")
      .def("set",
           [](Program& p, const std::string& name, nb::handle value) {
             NodeId id = p.graph().find_input(name);
             if (id < 0) {
               p.set(name, Array());  // raises the standard "no input named" error
             }
             p.set(name, array_from_python(value, p.graph().node(id).dtype, "set('" + name + "')"));
           },
           nb::arg("name"), nb::arg("value"))
      .def("bind", &Program::bind, nb::arg("dim"), nb::arg("value"))
      .def("run",
           [](Program& p) {
             nb::gil_scoped_release release;
             p.run();
           })
      .def("get",
           [](const Program& p, nb::handle key) {
             if (nb::isinstance<nb::str>(key)) return array_to_python(p.get(nb::cast<std::string>(key)));
             return array_to_python(p.get(nb::cast<Tensor>(key)));
           },
           nb::arg("output"))
      .def_prop_ro("output_names", &Program::output_names)
      .def("state", [](const Program& p, const std::string& name) { return array_to_python(p.state(name).clone()); },
           nb::arg("name"), "A copy of a state buffer.")
      .def("reset_state", &Program::reset_state, "Zeroes every state buffer.")
      .def_prop_ro("state_names", &Program::state_names)
      .def("report", &Program::report, "What compilation did (the schedule search, kernel by kernel).")
      .def_prop_ro("search_trace", [](const Program& p) {
        nb::list out;
        for (const SearchTrace& t : p.search_trace()) {
          nb::dict d;
          d["kernel"] = t.kernel;
          d["progress"] = t.progress;
          d["baseline_ms"] = t.baseline_ms;
          d["best_ms"] = t.best_ms;
          out.append(d);
        }
        return out;
      }, "Per searched kernel: {'kernel': fused nodes, 'progress': [(seconds, best ms so far), ...], 'baseline_ms' and 'best_ms': the heuristic and the winner re-measured side by side}.")
      .def_prop_ro("input_names",
                   [](const Program& p) {
                     std::vector<std::string> names;
                     for (NodeId id : p.graph().input_ids()) names.push_back(p.graph().node(id).name);
                     return names;
                   })
      .def_prop_ro("backend", [](const Program& p) { return std::string(p.backend_name()); })
      .def_prop_ro("stats", [](const Program& p) {
        auto s = p.stats();
        s["compile_total_seconds"] = p.compile_seconds;
        return s;
      }, "Compilation and memory numbers: kernels, arena_bytes, peak_live_bytes, compile seconds, ...");
  m.def("set_threads", &cpu::ThreadPool::set_global_threads, nb::arg("threads"),
        "Sets the number of CPU threads compiled programs run on.");
  m.def("cpu_info", [] {
    const cpu::Isa& isa = cpu::host_isa();
    nb::dict d;
    d["model"] = isa.model;
    d["features"] = isa.features();
    d["f32_lanes"] = isa.f32_lanes();
    d["threads"] = cpu::ThreadPool::global().size();
    return d;
  });

  m.def(
      "compile",
      [](PyGraph& g, nb::handle outputs, const std::string& backend, double budget_s, bool tuning_cache,
         const std::string& cache_path, bool progress, int64_t tune_dim, const std::map<std::string, int64_t>& tune_dims) {
        std::vector<Tensor> outs;
        if (!outputs.is_none()) {
          if (nb::isinstance<PyTensor>(outputs)) {
            outs.push_back(nb::cast<Tensor>(outputs));
          } else {
            for (nb::handle o : outputs) outs.push_back(nb::cast<Tensor>(o));
          }
        }
        CompileOptions options;
        options.backend = backend_named(backend);
        options.search_budget_s = budget_s;
        options.tuning_cache = tuning_cache;
        options.cache_path = cache_path;
        options.progress = progress;
        options.tune_dim = tune_dim;
        options.tune_dims = tune_dims;
        nb::gil_scoped_release release;
        return compile(*g.graph, outs, options);
      },
      nb::arg("graph"), nb::arg("outputs") = nb::none(), nb::arg("backend") = "cpu", nb::arg("budget_s") = 0.0,
      nb::arg("tuning_cache") = true, nb::arg("cache_path") = "", nb::arg("progress") = false,
      nb::arg("tune_dim") = 64, nb::arg("tune_dims") = std::map<std::string, int64_t>{},
      "Compiles a graph. budget_s > 0 searches schedules for that many seconds (results go to the tuning cache).");
}

}  // namespace lumen::python

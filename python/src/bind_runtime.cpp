// Bindings for compile() and Program, with numpy / DLPack in and out.
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "lumen/passes/precision.h"
#include "lumen/backend/cpu/isa.h"
#include "lumen/backend/cpu/thread_pool.h"

namespace lumen::python {

namespace {

// Takes the program's lock with the GIL released, so a thread holding the
// lock and waiting for the GIL (to convert outputs) cannot deadlock with one
// holding the GIL and waiting for the lock.
std::unique_lock<std::recursive_mutex> lock_program(const Program& p) {
  nb::gil_scoped_release release;
  return p.lock();
}

void set_input(Program& p, const std::string& name, nb::handle value) {
  NodeId id = p.graph().find_input(name);
  if (id < 0) p.set(name, Array());  // raises the standard "no input named" error
  p.set(name, array_from_python(value, p.graph().node(id).dtype, "set('" + name + "')"));
}

nb::object get_output(const Program& p, nb::handle key) {
  if (nb::isinstance<nb::str>(key)) return array_to_python(p.get(nb::cast<std::string>(key)));
  return array_to_python(p.get(nb::cast<Tensor>(key)));
}

// program(*inputs, **inputs): set, run and get as one step under the lock.
nb::object call_program(Program& p, nb::args args, nb::kwargs kwargs) {
  auto held = lock_program(p);
  std::vector<NodeId> ids = p.graph().input_ids();
  if (args.size() > ids.size()) fail("program takes ", ids.size(), " inputs, ", args.size(), " were given");
  for (size_t i = 0; i < args.size(); ++i) set_input(p, p.graph().node(ids[i]).name, args[i]);
  for (auto [name, value] : kwargs) set_input(p, nb::cast<std::string>(name), value);
  {
    nb::gil_scoped_release release;
    p.run();
  }
  std::vector<std::string> names = p.output_names();
  if (names.size() == 1) return array_to_python(p.get(names[0]));
  nb::list outs;
  for (const std::string& n : names) outs.append(array_to_python(p.get(n)));
  return nb::tuple(outs);
}

// program.execute(inputs, dims): every input positionally (None keeps the one
// set by the last call), dynamic dims bound by name, outputs as DLPack
// capsules sharing the program's result buffers (torch.from_dlpack: no copy;
// a capsule is consumed once).
nb::list execute_program(Program& p, nb::sequence inputs, const std::map<std::string, int64_t>& dims) {
  auto held = lock_program(p);
  std::vector<NodeId> ids = p.graph().input_ids();
  if (nb::len(inputs) != ids.size()) fail("execute: the program takes ", ids.size(), " inputs, ", nb::len(inputs), " were given");
  for (size_t i = 0; i < ids.size(); ++i) {
    nb::handle value = inputs[i];
    if (!value.is_none()) set_input(p, p.graph().node(ids[i]).name, value);
  }
  for (const auto& [dim, value] : dims) p.bind(dim, value);
  {
    nb::gil_scoped_release release;
    p.run();
  }
  nb::list outs;
  for (const std::string& n : p.output_names()) outs.append(array_to_dlpack(p.get(n)));
  return outs;
}

}  // namespace

void bind_runtime(nb::module_& m) {
  nb::class_<Program>(m, "Program", "A compiled graph: set inputs, run, get outputs.")
      .def("set",
           [](Program& p, const std::string& name, nb::handle value) {
             auto held = lock_program(p);
             set_input(p, name, value);
           },
           nb::arg("name"), nb::arg("value"))
      .def("bind",
           [](Program& p, const std::string& dim, int64_t value) {
             auto held = lock_program(p);
             p.bind(dim, value);
           },
           nb::arg("dim"), nb::arg("value"))
      .def("run",
           [](Program& p) {
             nb::gil_scoped_release release;
             p.run();
           })
      .def("get",
           [](const Program& p, nb::handle key) {
             auto held = lock_program(p);
             return get_output(p, key);
           },
           nb::arg("output"))
      .def("__call__", &call_program,
           "Sets inputs (by keyword, or positionally in input order), runs, and returns the outputs, as one step: "
           "safe when several threads share the program.")
      .def("execute", &execute_program, nb::arg("inputs"), nb::arg("dims") = std::map<std::string, int64_t>{},
           "Sets every input (positionally; None keeps the last one), binds dynamic dims, runs, and returns the outputs "
           "as DLPack capsules sharing the result memory (torch.from_dlpack takes each once, without a copy).")
      .def_prop_ro("output_names", &Program::output_names)
      .def("state",
           [](const Program& p, const std::string& name) {
             auto held = lock_program(p);
             return array_to_python(p.state(name).clone());
           },
           nb::arg("name"), "A copy of a state buffer.")
      .def("reset_state",
           [](Program& p) {
             auto held = lock_program(p);
             p.reset_state();
           },
           "Zeroes every state buffer.")
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
    d["avx512_bf16"] = isa.avx512_bf16;
    d["avx512_vnni"] = isa.avx512_vnni;
    d["amx"] = isa.amx_tile;
    d["threads"] = cpu::ThreadPool::global()->size();
    return d;
  });

  m.def(
      "compile",
      [](PyGraph& g, nb::handle outputs, const std::string& backend, double budget_s, bool tuning_cache,
         const std::string& cache_path, bool progress, int64_t tune_dim, const std::map<std::string, int64_t>& tune_dims,
         const std::string& precision, const std::string& recompute) {
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
        options.precision = passes::precision_named(precision);
        options.recompute = recompute_named(recompute);
        nb::gil_scoped_release release;
        return compile(*g.graph, outs, options);
      },
      nb::arg("graph"), nb::arg("outputs") = nb::none(), nb::arg("backend") = "cpu", nb::arg("budget_s") = 0.0,
      nb::arg("tuning_cache") = true, nb::arg("cache_path") = "", nb::arg("progress") = false,
      nb::arg("tune_dim") = 64, nb::arg("tune_dims") = std::map<std::string, int64_t>{}, nb::arg("precision") = "fp32",
      nb::arg("recompute") = "auto",
      "Compiles a graph. budget_s > 0 searches schedules for that many seconds (results go to the tuning cache). "
      "precision: \"fp32\", \"bf16\" or \"fp16\" (contractions take operands rounded to it, accumulated in fp32). "
      "recompute: \"auto\" (values read far from where they are made are computed again by their late readers where "
      "that is cheap and lowers the arena's largest live set), \"all\" or \"none\"; program.report() names them.");
}

}  // namespace lumen::python

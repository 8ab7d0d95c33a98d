#include "lumen/compiler/emit_stage.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "lumen/core/debug_flags.h"
#include "lumen/core/stopwatch.h"
#include "lumen/kernel/printer.h"

namespace lumen::compiler {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}


}  // namespace

void emit_kernels(Pipeline& p, std::shared_ptr<const backend::Backend> backend) {
  backend::CompiledProgram& prog = p.program;
  prog.backend = backend;
  auto start = std::chrono::steady_clock::now();
  for (kernel::Kernel& k : prog.kernels) k.name = backend->kernel_name(k);
  std::vector<std::string> sources = backend->render(prog.kernels, 0);
  prog.source.clear();
  for (const std::string& s : sources) prog.source += s;
  p.report.codegen_seconds = seconds_since(start);
  if (debug_enabled("kernels")) {
    for (const kernel::Kernel& k : prog.kernels) std::cerr << kernel::to_string(k) << "\n";
    std::cerr << prog.source << "\n";
  }
  if (prog.kernels.empty()) return;
  backend::CompileInfo info;
  prog.module = backend->compile(sources, &info);
  p.report.compile_seconds = info.seconds;
  p.report.cache_hit = info.cache_hit;
  p.report.object_path = info.object_path;
  for (backend::Launch& l : prog.launches) l.entry = backend->load(*prog.module, prog.kernels[l.kernel].name);
}

}  // namespace lumen::compiler

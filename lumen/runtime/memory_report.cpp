#include "lumen/runtime/memory_report.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <sstream>

namespace lumen {

namespace {

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// The launch's kernel and the first graph nodes it fuses.
std::string launch_name(const backend::CompiledProgram& program, int k) {
  const backend::Launch& l = program.launches[static_cast<size_t>(k)];
  const kernel::Kernel& kern = program.kernels[l.kernel];
  std::string fused;
  for (size_t f = 0; f < kern.fused.size() && f < 4; ++f) fused += (f ? " " : "") + kern.fused[f];
  if (kern.fused.size() > 4) fused += " +" + std::to_string(kern.fused.size() - 4);
  return kern.name + " [" + fused + "]";
}

}  // namespace

std::string peak_memory_report(const backend::CompiledProgram& program, const std::vector<BufferLife>& lives,
                               const std::vector<NodeId>& keys, const MemoryPlan& plan, size_t rows) {
  int steps = 0;
  for (const BufferLife& b : lives) steps = std::max(steps, b.last + 1);
  std::vector<int64_t> live(static_cast<size_t>(steps), 0);
  for (const BufferLife& b : lives) {
    for (int s = b.first; s <= b.last; ++s) live[static_cast<size_t>(s)] += b.bytes;
  }
  int peak = static_cast<int>(std::max_element(live.begin(), live.end()) - live.begin());
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "memory: arena %.2f MiB, largest live set %.2f MiB at launch %d of %zu: %s\n",
                mib(plan.arena_bytes), mib(plan.peak_live_bytes), peak, program.launches.size(),
                steps > 0 ? launch_name(program, peak).c_str() : "-");
  out << line;
  std::vector<size_t> at_peak;
  for (size_t i = 0; i < lives.size(); ++i) {
    if (lives[i].first <= peak && peak <= lives[i].last) at_peak.push_back(i);
  }
  std::stable_sort(at_peak.begin(), at_peak.end(), [&](size_t a, size_t b) { return lives[a].bytes > lives[b].bytes; });
  for (size_t r = 0; r < at_peak.size() && r < rows; ++r) {
    size_t i = at_peak[r];
    NodeId key = keys[i];
    std::string what = key >= 0 ? std::string(op_name(program.graph->node(key).op)) + "_" + std::to_string(key) + " " +
                                      to_string(program.graph->node(key).shape)
                                : "scratch " + std::to_string(-1 - key);
    std::snprintf(line, sizeof line, "  %8.3f MiB  launches %4d..%-4d %s  written by %s\n", mib(lives[i].bytes),
                  lives[i].first, lives[i].last, what.c_str(), launch_name(program, lives[i].first).c_str());
    out << line;
  }
  if (at_peak.size() > rows) out << "  ... " << at_peak.size() - rows << " more\n";
  return out.str();
}

}  // namespace lumen

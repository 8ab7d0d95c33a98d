#include "lumen/dist/plan_search.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "lumen/core/error.h"

namespace lumen::dist {

namespace {

bool admits(const models::LlamaConfig& c, const PlanShape& p) {
  if (c.heads % p.tp != 0 || c.hidden % p.tp != 0) return false;
  if (c.kv_heads % p.tp != 0 && p.tp % c.kv_heads != 0) return false;
  return c.layers >= p.pp;
}

std::string seconds_text(double s) {
  char b[32];
  if (s <= 0) return "-";
  if (s < 1e-3) {
    std::snprintf(b, sizeof b, "%.1f us", s * 1e6);
  } else if (s < 1) {
    std::snprintf(b, sizeof b, "%.2f ms", s * 1e3);
  } else {
    std::snprintf(b, sizeof b, "%.2f s", s);
  }
  return b;
}

std::string bytes_text(double b) {
  char t[32];
  std::snprintf(t, sizeof t, b >= 1e9 ? "%.1f GB" : "%.1f MB", b >= 1e9 ? b / 1e9 : b / 1e6);
  return t;
}

}  // namespace

std::vector<PlanCandidate> search_llama_plans(const LlamaWorkload& w, int ranks, const MachineModel& m) {
  if (ranks < 1) fail("plan: the rank count must be at least 1, got ", ranks);
  w.config.validate();
  std::vector<PlanCandidate> out;
  for (int tp = 1; tp <= ranks; ++tp) {
    if (ranks % tp != 0) continue;
    for (int pp = 1; pp <= ranks / tp; ++pp) {
      if ((ranks / tp) % pp != 0) continue;
      PlanShape s{tp, pp, ranks / tp / pp};
      if (!admits(w.config, s)) continue;
      out.push_back({s, estimate_decode(w, s, m), estimate_prefill(w, s, m)});
    }
  }
  if (out.empty()) fail("plan: ", w.config.summary(), " admits no plan over ", ranks, " ranks");
  std::stable_sort(out.begin(), out.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    if (a.decode.fits != b.decode.fits) return a.decode.fits;
    return a.decode.seconds < b.decode.seconds;
  });
  return out;
}

PlanShape best_runnable(const std::vector<PlanCandidate>& ranked) {
  for (const PlanCandidate& c : ranked) {
    if (c.shape.runnable() && c.decode.fits) return c.shape;
  }
  for (const PlanCandidate& c : ranked) {
    if (c.shape.runnable()) return c.shape;
  }
  fail("plan: none of the plans is one lumen runs (tensor or pipeline parallel over every rank)");
}

std::string format_plans(const std::vector<PlanCandidate>& ranked, const LlamaWorkload& w, const MachineModel& m) {
  std::ostringstream s;
  s << w.config.summary() << "\n";
  s << "workload: decode at position " << w.position << ", prefill of " << w.prompt << " tokens, " << w.sequences
    << " sequence(s), KV cache " << w.capacity << " rows\n";
  s << "compute: " << m.compute_source << "\ncommunication: " << m.comm_source << "\n";
  s << "predicted = modeled from those figures; measured = run here\n\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-18s %12s %12s %12s %12s %12s  %s\n", "plan", "decode", "(comm)", "prefill",
                "memory/rank", "measured", "");
  s << line;
  for (const PlanCandidate& c : ranked) {
    std::string measured = c.measured_decode > 0 ? seconds_text(c.measured_decode) : "-";
    std::string note = !c.decode.fits ? "does not fit" : c.shape.runnable() ? "" : "modeled only (lumen runs tp or pp alone)";
    if (c.measured_decode > 0) {
      char err[64];
      std::snprintf(err, sizeof err, "decode error %+.0f%%", 100.0 * (c.decode.seconds - c.measured_decode) / c.measured_decode);
      note = err;
      if (c.measured_prefill > 0) {
        std::snprintf(err, sizeof err, ", prefill %s (error %+.0f%%)", seconds_text(c.measured_prefill).c_str(),
                      100.0 * (c.prefill.seconds - c.measured_prefill) / c.measured_prefill);
        note += err;
      }
    }
    std::snprintf(line, sizeof line, "%-18s %12s %12s %12s %12s %12s  %s\n", c.shape.name().c_str(),
                  seconds_text(c.decode.seconds).c_str(), seconds_text(c.decode.comm_seconds).c_str(),
                  seconds_text(c.prefill.seconds).c_str(), bytes_text(c.decode.memory_bytes).c_str(), measured.c_str(),
                  note.c_str());
    s << line;
  }
  return s.str();
}

models::LlamaConfig llama_preset(const std::string& name) {
  models::LlamaConfig c;
  c.origin = "preset " + name;
  if (name == "llama-110m") {
    c.vocab = 32000, c.dim = 768, c.layers = 12, c.heads = 12, c.kv_heads = 12, c.hidden = 2048;
    c.tie_embeddings = true;
  } else if (name == "llama-7b") {
    c.vocab = 32000, c.dim = 4096, c.layers = 32, c.heads = 32, c.kv_heads = 32, c.hidden = 11008;
  } else if (name == "llama-70b") {
    c.vocab = 32000, c.dim = 8192, c.layers = 80, c.heads = 64, c.kv_heads = 8, c.hidden = 28672;
  } else {
    fail("plan: unknown preset '", name, "' (llama-110m, llama-7b, llama-70b)");
  }
  c.head_dim = c.dim / c.heads;
  c.max_position = 4096;
  c.validate();
  return c;
}

}  // namespace lumen::dist

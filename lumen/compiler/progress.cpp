#include "lumen/compiler/progress.h"

#include <unistd.h>

#include <algorithm>

namespace lumen::compiler {

namespace {

std::string printf_string(const char* format, double a, double b) {
  char text[128];
  std::snprintf(text, sizeof text, format, a, b);
  return text;
}

std::string seconds_of(double spent, double budget) {
  return printf_string("%.1f s of %.1f s", std::max(spent, 0.0), std::max(budget, 0.0));
}

}  // namespace

std::string format_progress(const ProgressCounts& c) {
  int total = std::max(c.kernels_total, 0);
  int done = std::clamp(c.kernels_done, 0, total);
  std::string line = c.stage == "compiling"
                         ? "[lumen] compiling " + std::to_string(total) + " kernel" + (total == 1 ? "" : "s")
                         : "[lumen] " + c.stage + " kernel " + std::to_string(done) + "/" + std::to_string(total);
  if (c.search_budget_s > 0) line += ", search " + seconds_of(c.search_seconds, c.search_budget_s);
  if (!c.detail.empty()) line += " | " + c.detail;
  return line;
}

std::string format_candidate(int node, int tried, int rejected, double speedup, double seconds_left) {
  char text[160];
  std::snprintf(text, sizeof text, "node %d: %d tried, %d rejected, best x%.2f, %.0f s left", node, tried, rejected,
                speedup, std::max(seconds_left, 0.0));
  return text;
}

std::string format_summary(const CompileSummary& s) {
  std::string line = "[lumen] compiled " + std::to_string(s.kernels) + " kernel" + (s.kernels == 1 ? "" : "s") + " in " +
                     printf_string("%.1f s", s.seconds, 0);
  if (s.search_budget_s > 0 || s.searched > 0 || s.from_cache > 0) {
    line += ": search " + seconds_of(s.search_seconds, s.search_budget_s) + " (" + std::to_string(s.searched) +
            " searched, " + std::to_string(s.from_cache) + " from the tuning cache)";
  }
  line += s.object_cache_hit ? ", object cache hit" : ", compiler " + printf_string("%.1f s", s.compiler_seconds, 0);
  return line;
}

ProgressLine::ProgressLine(bool live, bool summary, std::FILE* out) : live_(live), summary_(summary), out_(out) {}

bool ProgressLine::stderr_is_terminal() { return isatty(2) != 0; }

void ProgressLine::update(const ProgressCounts& counts, bool force) {
  if (!live_) return;
  auto now = std::chrono::steady_clock::now();
  if (written_ && !force && now - last_ < std::chrono::milliseconds(100)) return;
  std::string line = format_progress(counts);
  size_t width = line.size();
  if (line.size() < width_) line.append(width_ - line.size(), ' ');
  std::fprintf(out_, "\r%s", line.c_str());
  std::fflush(out_);
  width_ = width;
  last_ = now;
  written_ = true;
}

void ProgressLine::finish(const CompileSummary& summary) {
  if (live_ && written_) std::fprintf(out_, "\r%s\r", std::string(width_, ' ').c_str());
  if (summary_) std::fprintf(out_, "%s\n", format_summary(summary).c_str());
  std::fflush(out_);
}

}  // namespace lumen::compiler

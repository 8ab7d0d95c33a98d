// TuningCache — the on-disk record of search results, so a second compile
// of the same kernel does no search. SQLite in WAL mode: safe with several
// processes compiling at once. A missing, truncated or corrupt database is
// moved aside and rebuilt; cache trouble is never fatal (it is a miss).
//
// Key (see tuning_key): the kernel's canonical text (its default-schedule
// loop IR: ops, index math, dtypes), the dim binding it was tuned for, the
// device fingerprint (CPU model and ISA features), the compiler version and
// the cache format version, and the number of threads it runs on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lumen/core/expr_eval.h"
#include "lumen/kernel/ir.h"

struct sqlite3;

namespace lumen::search {

struct TuningEntry {
  std::string actions;      // the winning action list (kernel::to_string)
  double best_ms = 0;
  double baseline_ms = 0;   // the heuristic schedule's time
  std::string description;  // which nodes the kernel fuses, for `lumen cache list`
  int64_t created = 0;      // unix time
};

// `fingerprint`: the backend's (Backend::fingerprint: for the cpu, CPU model, ISA features, compiler version).
std::string tuning_key(const kernel::Kernel& canonical, const Bindings& dims, int threads, const std::string& fingerprint);
// The key of a whole-program decision: the searched program's source, the
// unsearched program's source, the dims they were timed at, the backend's fingerprint and threads.
std::string program_key(const std::string& source, const std::string& heuristic_source, const Bindings& dims,
                        int threads, const std::string& fingerprint);

class TuningCache {
 public:
  // LUMEN_CACHE_DIR/tuning.db (see cpu::cache_dir) unless a path is given.
  explicit TuningCache(const std::string& path = "");
  ~TuningCache();
  TuningCache(const TuningCache&) = delete;
  TuningCache& operator=(const TuningCache&) = delete;

  std::optional<TuningEntry> lookup(const std::string& key);
  void store(const std::string& key, const TuningEntry& entry);
  std::vector<std::pair<std::string, TuningEntry>> list();
  int clear();  // removes every entry, returns how many
  const std::string& path() const { return path_; }
  // Problems met and recovered from (e.g. "rebuilt a corrupt database").
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  bool open();
  void rebuild(const std::string& why);
  bool exec(const char* sql);

  std::string path_;
  sqlite3* db_ = nullptr;
  std::vector<std::string> warnings_;
};

}  // namespace lumen::search

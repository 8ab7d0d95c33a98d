#include "lumen/search/tuning_cache.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <ctime>

#include "lumen/backend/cpu/compiler.h"
#include "lumen/kernel/printer.h"
#include "lumen/kernel/schedule_space.h"

namespace lumen::search {

namespace {

constexpr const char* kFormat = "lumen-tuning-v1";

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS tuning ("
    " key TEXT PRIMARY KEY, actions TEXT NOT NULL, best_ms REAL, baseline_ms REAL,"
    " description TEXT, created INTEGER);"
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT);";

struct Statement {
  sqlite3_stmt* stmt = nullptr;
  Statement(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) stmt = nullptr;
  }
  ~Statement() { sqlite3_finalize(stmt); }
  bool ok() const { return stmt != nullptr; }
};

std::string column_text(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}

// The hash of `text` followed by the dims (sorted by name), the backend's
// fingerprint and the thread count: every key's common tail.
std::string hashed_key(std::string text, const Bindings& dims, int threads, const std::string& fingerprint) {
  std::vector<std::pair<std::string, int64_t>> sorted(dims.begin(), dims.end());
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [name, value] : sorted) text += name + "=" + std::to_string(value) + "\n";
  text += fingerprint + "\nthreads=" + std::to_string(threads) + "\n";
  return cpu::hash_hex(text);
}

}  // namespace

std::string tuning_key(const kernel::Kernel& kernel, const Bindings& dims, int threads, const std::string& fingerprint) {
  // Only the computation counts: not node ids, input names or the kernel's name.
  kernel::Kernel canonical = kernel;
  canonical.name = "k";
  canonical.fused.clear();
  for (size_t i = 0; i < canonical.buffers.size(); ++i) canonical.buffers[i].name = "b" + std::to_string(i);
  return hashed_key(std::string(kFormat) + " space " + std::to_string(kernel::kScheduleSpaceVersion) + "\n" +
                        kernel::to_string(canonical) + "\n",
                    dims, threads, fingerprint);
}

std::string program_key(const std::string& source, const std::string& heuristic_source, const Bindings& dims,
                        int threads, const std::string& fingerprint) {
  return hashed_key(std::string(kFormat) + " program space " + std::to_string(kernel::kScheduleSpaceVersion) + "\n" +
                        source + "\n--- heuristic\n" + heuristic_source,
                    dims, threads, fingerprint);
}

TuningCache::TuningCache(const std::string& path) : path_(path.empty() ? cpu::cache_dir() + "/tuning.db" : path) {
  std::string dir = path_.substr(0, path_.rfind('/'));
  std::string partial;
  for (size_t at = 0; at != std::string::npos;) {  // mkdir -p
    at = dir.find('/', at + 1);
    partial = dir.substr(0, at);
    if (!partial.empty()) mkdir(partial.c_str(), 0755);
  }
  if (!open()) rebuild("could not be opened");
}

TuningCache::~TuningCache() {
  if (db_) sqlite3_close(db_);
}

bool TuningCache::exec(const char* sql) {
  char* error = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &error);
  sqlite3_free(error);
  return rc == SQLITE_OK;
}

bool TuningCache::open() {
  if (sqlite3_open(path_.c_str(), &db_) != SQLITE_OK) {
    sqlite3_close(db_);
    db_ = nullptr;
    return false;
  }
  sqlite3_busy_timeout(db_, 10000);  // another process may be writing
  if (!exec("PRAGMA journal_mode=WAL;") || !exec(kSchema)) return false;
  Statement check(db_, "PRAGMA quick_check;");
  if (!check.ok() || sqlite3_step(check.stmt) != SQLITE_ROW || column_text(check.stmt, 0) != "ok") return false;
  return true;
}

void TuningCache::rebuild(const std::string& why) {
  if (db_) sqlite3_close(db_);
  db_ = nullptr;
  std::string aside = path_ + ".corrupt-" + std::to_string(std::time(nullptr));
  std::rename(path_.c_str(), aside.c_str());
  std::remove((path_ + "-wal").c_str());
  std::remove((path_ + "-shm").c_str());
  warnings_.push_back("tuning cache " + path_ + " " + why + "; moved it to " + aside + " and started a new one");
  if (!open()) {
    if (db_) sqlite3_close(db_);
    db_ = nullptr;
    warnings_.push_back("tuning cache " + path_ + " is unusable; tuning results will not be remembered");
  }
}

std::optional<TuningEntry> TuningCache::lookup(const std::string& key) {
  if (!db_) return std::nullopt;
  Statement s(db_, "SELECT actions, best_ms, baseline_ms, description, created FROM tuning WHERE key = ?;");
  if (!s.ok()) {
    rebuild("could not be read");
    return std::nullopt;
  }
  sqlite3_bind_text(s.stmt, 1, key.c_str(), -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(s.stmt);
  if (rc == SQLITE_ROW) {
    return TuningEntry{column_text(s.stmt, 0), sqlite3_column_double(s.stmt, 1), sqlite3_column_double(s.stmt, 2),
                       column_text(s.stmt, 3), sqlite3_column_int64(s.stmt, 4)};
  }
  if (rc != SQLITE_DONE) rebuild("failed a read (" + std::string(sqlite3_errstr(rc)) + ")");
  return std::nullopt;
}

void TuningCache::store(const std::string& key, const TuningEntry& entry) {
  if (!db_) return;
  Statement s(db_,
              "INSERT OR REPLACE INTO tuning (key, actions, best_ms, baseline_ms, description, created) "
              "VALUES (?, ?, ?, ?, ?, ?);");
  if (!s.ok()) {
    rebuild("could not be written");
    return;
  }
  sqlite3_bind_text(s.stmt, 1, key.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(s.stmt, 2, entry.actions.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(s.stmt, 3, entry.best_ms);
  sqlite3_bind_double(s.stmt, 4, entry.baseline_ms);
  sqlite3_bind_text(s.stmt, 5, entry.description.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(s.stmt, 6, entry.created ? entry.created : static_cast<int64_t>(std::time(nullptr)));
  int rc = sqlite3_step(s.stmt);
  if (rc != SQLITE_DONE) warnings_.push_back("tuning cache write failed: " + std::string(sqlite3_errstr(rc)));
}

std::vector<std::pair<std::string, TuningEntry>> TuningCache::list() {
  std::vector<std::pair<std::string, TuningEntry>> out;
  if (!db_) return out;
  Statement s(db_, "SELECT key, actions, best_ms, baseline_ms, description, created FROM tuning ORDER BY created;");
  if (!s.ok()) return out;
  while (sqlite3_step(s.stmt) == SQLITE_ROW) {
    out.push_back({column_text(s.stmt, 0),
                   TuningEntry{column_text(s.stmt, 1), sqlite3_column_double(s.stmt, 2),
                               sqlite3_column_double(s.stmt, 3), column_text(s.stmt, 4),
                               sqlite3_column_int64(s.stmt, 5)}});
  }
  return out;
}

int TuningCache::clear() {
  if (!db_) return 0;
  int n = static_cast<int>(list().size());
  exec("DELETE FROM tuning;");
  return n;
}

}  // namespace lumen::search

// `lumen cache list|clear|path`: the tuning cache and compiled-object cache.
#include <sys/stat.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "lumen/backend/cpu/compiler.h"
#include "lumen/search/tuning_cache.h"
#include "tools/lumen/commands.h"

namespace lumen::tools {

void add_cache_command(CLI::App& app) {
  CLI::App* cache = app.add_subcommand("cache", "Show or clear lumen's caches (tuning results, compiled kernels)");
  cache->require_subcommand(1);
  cache->fallthrough();  // --db may follow the subcommand
  static std::string db;
  cache->add_option("--db", db, "Tuning database (default: LUMEN_CACHE_DIR/tuning.db)");

  cache->add_subcommand("path", "Print where the caches are")->callback([] {
    std::cout << "tuning results:   " << (db.empty() ? cpu::cache_dir() + "/tuning.db" : db) << "\n"
              << "compiled kernels: " << cpu::cache_dir() << "/objects\n";
  });

  cache->add_subcommand("list", "List tuning results: kernel, best time, speed-up over the heuristic, schedule")
      ->callback([] {
        search::TuningCache c(db);
        for (const std::string& w : c.warnings()) std::cerr << "warning: " << w << "\n";
        auto entries = c.list();
        for (const auto& [key, e] : entries) {
          char when[32];
          std::time_t t = static_cast<std::time_t>(e.created);
          std::strftime(when, sizeof when, "%Y-%m-%d %H:%M", std::localtime(&t));
          double speedup = e.best_ms > 0 ? e.baseline_ms / e.best_ms : 1.0;
          std::printf("%s  %s  best %9.3f ms  x%-5.2f  %s\n    schedule: %s\n", key.c_str(), when, e.best_ms, speedup,
                      e.description.substr(0, 80).c_str(), e.actions.c_str());
        }
        std::printf("%zu tuning result(s) in %s\n", entries.size(), c.path().c_str());
      });

  cache->add_subcommand("clear", "Delete all tuning results and compiled kernels")->callback([] {
    search::TuningCache c(db);
    int n = c.clear();
    std::error_code ec;
    auto removed = std::filesystem::remove_all(cpu::cache_dir() + "/objects", ec);
    std::printf("removed %d tuning result(s) and %ju compiled object file(s)\n", n, static_cast<uintmax_t>(removed));
  });
}

}  // namespace lumen::tools

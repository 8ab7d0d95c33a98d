// `lumen tune`: search schedules for a model's programs and fill the tuning
// cache, so later compiles of the same model are instant and fast.
#include <chrono>
#include <cstdio>

#include "lumen/core/error.h"
#include "tools/lumen/commands.h"
#include "tools/lumen/model_files.h"

namespace lumen::tools {

void add_tune_command(CLI::App& app) {
  static CommonOptions common;
  static bool report = false;
  common.budget_s = 60;
  CLI::App* cmd = app.add_subcommand("tune", "Search schedules for a model and store the winners in the tuning cache");
  common.add_to(cmd);
  cmd->add_flag("--report", report, "Print the search report kernel by kernel");
  cmd->callback([] {
    if (common.budget_s <= 0) fail("tune: --budget must be positive (seconds of search)");
    if (common.no_tuning_cache) fail("tune: --no-tuning-cache would throw the results away");
    common.progress = true;
    auto start = std::chrono::steady_clock::now();
    std::string text;
    if (model_kind(common.model) == ModelKind::Decoder) {
      Decoder d = open_decoder(common);
      text = d.runner->report();
    } else {
      auto e = open_encoder(common);
      text = e->program().report();
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (report) std::printf("%s\n", text.c_str());
    std::printf("tuned %s in %.1f s (budget %.0f s); results are in the tuning cache (`lumen cache list`)\n",
                common.model.c_str(), s, common.budget_s);
  });
}

}  // namespace lumen::tools

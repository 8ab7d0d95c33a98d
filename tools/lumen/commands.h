// Registration of the `lumen` subcommands (one file each: cmd_<name>.cpp).
#pragma once

#include <CLI/CLI.hpp>

namespace lumen::tools {

void add_cache_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_embed_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_tune_command(CLI::App& app);
void add_show_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_tc_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_plan_command(CLI::App& app);  // only with lumen/dist

}  // namespace lumen::tools

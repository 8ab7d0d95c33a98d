// The `lumen` command line. Each subcommand lives in its own file
// (cmd_<name>.cpp) and registers itself here.
#include <CLI/CLI.hpp>

#include <iostream>

#include "lumen/core/error.h"
#include "tools/lumen/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"lumen: a deep learning compiler whose optimizer is search"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");
  lumen::tools::add_generate_command(app);
  lumen::tools::add_embed_command(app);
  lumen::tools::add_bench_command(app);
  lumen::tools::add_tune_command(app);
  lumen::tools::add_show_command(app);
  lumen::tools::add_cache_command(app);
  lumen::tools::add_chat_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const lumen::Error& e) {
    std::cerr << "lumen: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

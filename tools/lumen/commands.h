// Registration of the `lumen` subcommands.
#pragma once

#include <CLI/CLI.hpp>

namespace lumen::tools {

void add_cache_command(CLI::App& app);

}  // namespace lumen::tools

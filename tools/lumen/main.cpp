// The `lumen` command line. Each subcommand lives in its own file
// (cmd_<name>.cpp) and registers itself here.
#include <CLI/CLI.hpp>

#include <cxxabi.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <new>
#include <typeinfo>

#include "lumen/core/error.h"
#include "tools/lumen/commands.h"
#ifdef LUMEN_HAVE_DIST
#include "lumen/dist/communicator.h"
#endif

namespace {

// "std::bad_variant_access" rather than "St18bad_variant_access".
std::string exception_type(const std::exception& e) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : typeid(e).name();
}

int run(CLI::App& app, int argc, char** argv);

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lumen: a deep learning compiler whose optimizer is search"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");
  lumen::tools::add_generate_command(app);
  lumen::tools::add_embed_command(app);
  lumen::tools::add_bench_command(app);
  lumen::tools::add_tune_command(app);
  lumen::tools::add_show_command(app);
  lumen::tools::add_run_command(app);
  lumen::tools::add_tc_command(app);
  lumen::tools::add_train_command(app);
  lumen::tools::add_cache_command(app);
  lumen::tools::add_chat_command(app);
  lumen::tools::add_serve_command(app);
#ifdef LUMEN_HAVE_DIST
  lumen::tools::add_plan_command(app);
#endif
  int code = run(app, argc, argv);
#ifdef LUMEN_HAVE_DIST
  // Under mpirun a rank that fails must not leave the others waiting: end the job.
  if (code != 0 && lumen::dist::launched_with_ranks()) lumen::dist::abort_job(code);
#endif
  return code;
}

namespace {

int run(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const lumen::Error& e) {
    std::cerr << "lumen: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "lumen: out of memory (the model or its KV cache does not fit; try a smaller --capacity)\n";
    return 1;
  } catch (const std::exception& e) {  // a bug or an unchecked input: still a message, never an abort
    std::cerr << "lumen: unexpected error (" << exception_type(e) << "): " << e.what() << "\n";
    return 1;
  } catch (...) {
    std::cerr << "lumen: unexpected error of an unknown type\n";
    return 1;
  }
  return 0;
}

}  // namespace

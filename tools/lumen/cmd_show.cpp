// `lumen show`: a model's primitive graph and its compiled kernels as
// pictures (SVG/PNG via Graphviz; DOT when Graphviz is missing).
#include <cstdio>

#include "lumen/core/error.h"
#include "tools/lumen/commands.h"
#include "tools/lumen/model_files.h"

namespace lumen::tools {

void add_show_command(CLI::App& app) {
  static CommonOptions common;
  static std::string out = "lumen_show", format = "svg";
  static int64_t layers = 1;
  static bool search = false;
  CLI::App* cmd = app.add_subcommand("show", "Draw a model's graph before and after compilation");
  common.add_to(cmd);
  cmd->add_option("--out,-o", out, "Output file prefix (writes PREFIX_graph.EXT and PREFIX_kernels.EXT)");
  cmd->add_option("--format", format, "svg, png, pdf or dot")->check(CLI::IsMember({"svg", "png", "pdf", "dot"}));
  cmd->add_option("--layers", layers, "Decoder layers to draw (0: all; pictures of big models are huge)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--search", search,
                "Also print what compiling searched: graph-level rules and candidates, each kernel's schedule search, "
                "the whole-program check (use with --budget)");
  cmd->callback([] {
    Program* p = nullptr;
    Decoder d;
    std::unique_ptr<models::SentenceEncoder> e;
    if (model_kind(common.model) == ModelKind::Decoder) {
      d = open_decoder(common, layers);
      p = &d.runner->decode_program();
    } else {
      e = open_encoder(common);
      p = &e->program();
    }
    std::string graph = p->graph().display(out + "_graph." + format);
    std::string kernels = write_dot(p->kernels_dot(), out + "_kernels." + format);
    std::printf("graph (%zu primitive nodes): %s\nkernels (%.0f): %s\n", p->graph().size(), graph.c_str(),
                p->stats()["kernels"], kernels.c_str());
    if (search) std::printf("\n%s", p->report().c_str());
  });
}

}  // namespace lumen::tools

// `lumen embed`: sentence embeddings with a BERT-style model, as JSON lines.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "lumen/core/error.h"
#include "tools/lumen/commands.h"
#include "tools/lumen/model_files.h"

namespace lumen::tools {

void add_embed_command(CLI::App& app) {
  struct Args {
    CommonOptions common;
    std::vector<std::string> texts;
    std::string file;
    int64_t batch = 32;
  };
  static Args a;
  CLI::App* cmd = app.add_subcommand("embed", "Embed sentences with a BERT-style sentence-transformers model");
  a.common.add_to(cmd);
  cmd->add_option("--text,-t", a.texts, "A sentence (repeatable)");
  cmd->add_option("--file,-f", a.file, "A file with one sentence per line")->check(CLI::ExistingFile);
  cmd->add_option("--batch", a.batch, "Sentences per run")->check(CLI::PositiveNumber);
  cmd->callback([] {
    std::vector<std::string> texts = a.texts;
    if (!a.file.empty()) {
      std::ifstream in(a.file);
      for (std::string line; std::getline(in, line);) texts.push_back(line);
    }
    if (texts.empty()) fail("embed: give --text or --file");
    auto start = std::chrono::steady_clock::now();
    auto encoder = open_encoder(a.common);
    double compile = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    start = std::chrono::steady_clock::now();
    Array e = encoder->embed(texts, a.batch);
    double run = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto* v = static_cast<const float*>(e.data());
    int64_t dim = e.shape()[1];
    for (size_t i = 0; i < texts.size(); ++i) {
      std::cout << "[";
      for (int64_t k = 0; k < dim; ++k) std::printf("%s%.7g", k ? ", " : "", v[static_cast<int64_t>(i) * dim + k]);
      std::cout << "]\n";
    }
    std::fprintf(stderr, "%s\ncompiled in %.2f s; %zu sentence(s) embedded in %.3f s (%.1f sentences/s), dim %lld%s\n",
                 encoder->config().summary().c_str(), compile, texts.size(), run, static_cast<double>(texts.size()) / run,
                 static_cast<long long>(dim), encoder->normalizes() ? ", L2-normalized" : "");
  });
}

}  // namespace lumen::tools

// `lumen generate`: prefill a prompt and stream sampled tokens.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "lumen/core/error.h"
#include "tools/lumen/commands.h"
#include "tools/lumen/model_files.h"

namespace lumen::tools {

void add_generate_command(CLI::App& app) {
  struct Args {
    CommonOptions common;
    std::string prompt, tokens;
    int64_t max_tokens = 64;
    models::SamplingOptions sampling;
  };
  static Args a;
  CLI::App* cmd = app.add_subcommand("generate", "Generate text with a Llama-family model (GGUF or Hugging Face directory)");
  a.common.add_to(cmd);
  auto* prompt = cmd->add_option("--prompt,-p", a.prompt, "Prompt text (tokenized with the model's tokenizer)");
  auto* tokens = cmd->add_option("--tokens", a.tokens, "Prompt token ids, comma-separated (instead of --prompt)");
  prompt->excludes(tokens);
  cmd->add_option("--max-tokens,-n", a.max_tokens, "Tokens to generate")->check(CLI::PositiveNumber);
  add_sampling_options(cmd, a.sampling);
  cmd->callback([] {
    if (a.prompt.empty() && a.tokens.empty()) fail("generate: give --prompt TEXT or --tokens IDS");
    auto start = std::chrono::steady_clock::now();
    a.common.progress = true;
    Decoder d = open_decoder(a.common);
    double compile = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::vector<int32_t> prompt;
    if (!a.tokens.empty()) {
      prompt = parse_ids(a.tokens);
    } else {
      if (!d.tokenizer) fail("generate: '", a.common.model, "' carries no tokenizer; pass --tokens");
      prompt = d.tokenizer->encode(a.prompt, true);
    }
    std::fprintf(stderr, "%s\ncompiled in %.2f s; prompt: %zu tokens\n", d.runner->config().summary().c_str(), compile,
                 prompt.size());
    models::Sampler sampler(a.sampling);
    std::vector<int32_t> generated;
    std::string shown;
    models::GenerationStats stats;
    d.runner->generate(prompt, a.max_tokens, sampler, [&](int32_t t) {
      generated.push_back(t);
      if (d.tokenizer) {  // print what the new token added to the decoded text
        std::string text = d.tokenizer->decode(generated, true);
        if (text.size() > shown.size() && text.compare(0, shown.size(), shown) == 0) {
          std::cout << text.substr(shown.size()) << std::flush;
          shown = text;
        }
      } else {
        std::cout << (generated.size() > 1 ? "," : "") << t << std::flush;
      }
      return true;
    }, &stats);
    std::cout << std::endl;  // the text ends its line, and is out before the statistics on stderr
    std::fprintf(stderr, "prefill: %lld tokens in %.3f s (%.1f tokens/s)\ndecode: %lld tokens in %.3f s (%.1f tokens/s); stop: %s\n",
                 static_cast<long long>(stats.prompt_tokens), stats.prefill_seconds, stats.prefill_tokens_per_second(),
                 static_cast<long long>(stats.generated_tokens), stats.decode_seconds, stats.decode_tokens_per_second(),
                 models::stop_reason_name(stats.stop_reason));
    if (stats.stop_reason == models::StopReason::ContextFull) {
      fail("generate: the KV cache is full (capacity ", d.runner->capacity(), " positions): ", stats.generated_tokens, " of ",
           a.max_tokens, " tokens generated (raise --capacity)");
    }
  });
}

}  // namespace lumen::tools

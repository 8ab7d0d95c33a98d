// `lumen generate`: prefill a prompt and stream sampled tokens. With
// --parallel (under mpirun) every rank runs the model under one plan and rank
// 0 prints.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "lumen/core/error.h"
#include "tools/lumen/commands.h"
#include "tools/lumen/model_files.h"
#ifdef LUMEN_HAVE_DIST
#include "tools/lumen/parallel.h"
#endif

namespace lumen::tools {

namespace {

struct Args {
  CommonOptions common;
  std::string prompt, tokens, parallel;
  int64_t max_tokens = 64;
  models::SamplingOptions sampling;
};

// Generates with `runner` (a LlamaRunner or a DistLlamaRunner), printing when `print`.
template <typename Runner>
void stream(Runner& runner, const io::Tokenizer* tokenizer, const std::vector<int32_t>& prompt, const Args& a, bool print) {
  models::Sampler sampler(a.sampling);
  std::vector<int32_t> generated;
  std::string shown;
  models::GenerationStats stats;
  runner.generate(prompt, a.max_tokens, sampler, [&](int32_t t) {
    generated.push_back(t);
    if (!print) return true;
    if (tokenizer) {  // print what the new token added to the decoded text
      std::string text = tokenizer->decode(generated, true);
      if (text.size() > shown.size() && text.compare(0, shown.size(), shown) == 0) {
        std::cout << text.substr(shown.size()) << std::flush;
        shown = text;
      }
    } else {
      std::cout << (generated.size() > 1 ? "," : "") << t << std::flush;
    }
    return true;
  }, &stats);
  if (!print) return;
  std::cout << std::endl;  // the text ends its line, and is out before the statistics on stderr
  std::fprintf(stderr, "prefill: %lld tokens in %.3f s (%.1f tokens/s)\ndecode: %lld tokens in %.3f s (%.1f tokens/s); stop: %s\n",
               static_cast<long long>(stats.prompt_tokens), stats.prefill_seconds, stats.prefill_tokens_per_second(),
               static_cast<long long>(stats.generated_tokens), stats.decode_seconds, stats.decode_tokens_per_second(),
               models::stop_reason_name(stats.stop_reason));
  if (stats.stop_reason == models::StopReason::ContextFull) {
    fail("generate: the KV cache is full (capacity ", runner.capacity(), " positions): ", stats.generated_tokens, " of ",
         a.max_tokens, " tokens generated (raise --capacity)");
  }
}

std::vector<int32_t> prompt_of(const Args& a, const io::Tokenizer* tokenizer) {
  if (!a.tokens.empty()) return parse_ids(a.tokens);
  if (!tokenizer) fail("generate: '", a.common.model, "' carries no tokenizer; pass --tokens");
  return tokenizer->encode(a.prompt, true);
}

void generate_parallel(Args& a) {
#ifdef LUMEN_HAVE_DIST
  auto start = std::chrono::steady_clock::now();
  DecoderFiles files = load_decoder_files(a.common.model);
  std::vector<int32_t> prompt = prompt_of(a, files.tokenizer.get());
  std::string table;
  auto runner = open_parallel_decoder(a.common, files, a.parallel, static_cast<int64_t>(prompt.size()), a.max_tokens, &table);
  double compile = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  bool print = is_rank0();
  if (print) {
    std::fprintf(stderr, "%s%s\n%d ranks, plan %s; compiled in %.2f s; prompt: %zu tokens\n", table.c_str(),
                 files.config.summary().c_str(), runner->spec().ranks(), runner->spec().stages > 1 ? "pp" : "tp", compile,
                 prompt.size());
  }
  stream(*runner, files.tokenizer.get(), prompt, a, print);
#else
  (void)a;
  fail("generate: this lumen was built without lumen/dist (no MPI found): --parallel is unavailable");
#endif
}

}  // namespace

void add_generate_command(CLI::App& app) {
  static Args a;
  CLI::App* cmd = app.add_subcommand("generate", "Generate text with a Llama-family model (GGUF or Hugging Face directory)");
  a.common.add_to(cmd);
  auto* prompt = cmd->add_option("--prompt,-p", a.prompt, "Prompt text (tokenized with the model's tokenizer)");
  auto* tokens = cmd->add_option("--tokens", a.tokens, "Prompt token ids, comma-separated (instead of --prompt)");
  prompt->excludes(tokens);
  cmd->add_option("--max-tokens,-n", a.max_tokens, "Tokens to generate")->check(CLI::PositiveNumber);
  cmd->add_option("--parallel", a.parallel,
                  "Run on every rank mpirun started: tp (tensor parallel), pp (pipeline) or auto (the plan search picks)")
      ->check(CLI::IsMember({"tp", "pp", "auto"}));
  add_sampling_options(cmd, a.sampling);
  cmd->callback([] {
    if (a.prompt.empty() && a.tokens.empty()) fail("generate: give --prompt TEXT or --tokens IDS");
    a.common.progress = a.parallel.empty();
    if (!a.parallel.empty()) return generate_parallel(a);
    auto start = std::chrono::steady_clock::now();
    Decoder d = open_decoder(a.common);
    double compile = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::vector<int32_t> prompt = prompt_of(a, d.tokenizer.get());
    std::fprintf(stderr, "%s\ncompiled in %.2f s; prompt: %zu tokens\n", d.runner->config().summary().c_str(), compile,
                 prompt.size());
    stream(*d.runner, d.tokenizer.get(), prompt, a, true);
  });
}

}  // namespace lumen::tools

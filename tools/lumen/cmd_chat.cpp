// `lumen chat`: a conversation with a model, using the model's own chat
// template. Interactive on a terminal (history kept, /reset, Ctrl-D to
// leave), or one message with -p.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "lumen/core/error.h"
#include "lumen/models/chat_session.h"
#include "tools/lumen/commands.h"
#include "tools/lumen/model_files.h"

namespace lumen::tools {

namespace {

void print_turn_stats(const models::ChatReply& r) {
  std::fprintf(stderr, "[%s; prefill %lld tokens at %.1f tokens/s, reply %lld tokens at %.1f tokens/s]\n",
               r.ended_turn ? "end of turn" : "stopped at the token limit", static_cast<long long>(r.stats.prompt_tokens),
               r.stats.prefill_tokens_per_second(), static_cast<long long>(r.stats.generated_tokens),
               r.stats.decode_tokens_per_second());
}

models::ChatReply answer(models::ChatSession& chat, const std::string& message, int64_t max_tokens,
                         models::Sampler& sampler) {
  models::ChatReply r = chat.reply(message, max_tokens, sampler, [](const std::string& piece) { std::cout << piece << std::flush; });
  std::cout << "\n" << std::flush;
  print_turn_stats(r);
  return r;
}

}  // namespace

void add_chat_command(CLI::App& app) {
  struct Args {
    CommonOptions common;
    std::string prompt, system;
    int64_t max_tokens = 256;
    models::SamplingOptions sampling;
  };
  static Args a;
  CLI::App* cmd = app.add_subcommand("chat", "Chat with a model through its own chat template (interactive, or one message with -p)");
  a.common.add_to(cmd);
  cmd->add_option("--prompt,-p", a.prompt, "One message: print the reply and exit");
  cmd->add_option("--system", a.system, "A system message before the conversation");
  cmd->add_option("--max-tokens,-n", a.max_tokens, "Most tokens in one reply")->check(CLI::PositiveNumber);
  add_sampling_options(cmd, a.sampling);
  cmd->callback([] {
    auto start = std::chrono::steady_clock::now();
    a.common.progress = true;
    Decoder d = open_decoder(a.common);
    if (!d.tokenizer) fail("chat: '", a.common.model, "' carries no tokenizer");
    models::ChatSession chat(*d.runner, *d.tokenizer, d.chat);
    chat.set_system(a.system);
    double compile = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "%s\ncompiled in %.2f s\n", d.runner->config().summary().c_str(), compile);
    models::Sampler sampler(a.sampling);
    if (!a.prompt.empty()) {
      answer(chat, a.prompt, a.max_tokens, sampler);
      return;
    }
    bool terminal = isatty(0);
    if (terminal) std::fprintf(stderr, "Type a message; /reset forgets the conversation; Ctrl-D leaves.\n");
    std::string line;
    while (true) {
      if (terminal) std::fprintf(stderr, "> ");
      if (!std::getline(std::cin, line)) break;
      if (line.empty()) continue;
      if (line == "/reset") {
        chat.reset();
        std::fprintf(stderr, "(conversation forgotten)\n");
        continue;
      }
      if (line == "/exit" || line == "/quit") break;
      try {
        answer(chat, line, a.max_tokens, sampler);
      } catch (const Error& e) {  // e.g. the conversation outgrew the cache: say so and carry on
        std::fprintf(stderr, "error: %s\n", e.what());
      }
    }
    if (terminal) std::fprintf(stderr, "\n");
  });
}

}  // namespace lumen::tools

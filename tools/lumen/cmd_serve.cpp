// `lumen serve`: an OpenAI-compatible HTTP server over one model (a decoder:
// completions and chat; a sentence encoder: embeddings). SIGINT / SIGTERM stop
// it gracefully: no new connections, in-flight requests finish (a stream is
// ended at its next piece); a second signal exits at once.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "lumen/core/error.h"
#include "lumen/serve/batched_engine.h"
#include "lumen/serve/http_server.h"
#include "lumen/serve/sequential_engine.h"
#include "tools/lumen/commands.h"
#include "tools/lumen/model_files.h"

namespace lumen::tools {

namespace {

// The model id clients name: --name, else the file or directory name (without .gguf).
std::string model_name(const std::string& given, const std::string& path) {
  if (!given.empty()) return given;
  std::filesystem::path p(path);
  if (p.filename().empty()) p = p.parent_path();
  return p.extension() == ".gguf" ? p.stem().string() : p.filename().string();
}

// SIGINT and SIGTERM are blocked in every thread (set before any is started)
// and taken by this one with sigwait, so stopping is ordinary code, not a handler.
void watch_signals(const sigset_t& signals, serve::HttpServer& server) {
  std::thread([signals, &server] {
    int sig = 0;
    if (sigwait(&signals, &sig) != 0) return;
    std::fprintf(stderr, "lumen serve: %s: stopping (in-flight requests finish; signal again to exit now)\n", strsignal(sig));
    server.stop();
    if (sigwait(&signals, &sig) == 0) _exit(128 + sig);
  }).detach();
}

struct EngineArgs {
  std::string kind = "batched";
  int64_t max_batch = 16, kv_blocks = 0, block_size = 16, prefill_chunk = 256;
};

// The decoder's engine: batched (a paged model compiled for many sequences) or sequential (one LlamaRunner).
struct Generation {
  Decoder decoder;
  std::unique_ptr<serve::PagedLlama> paged;
  std::unique_ptr<serve::Engine> engine;
  std::string summary;
};

void open_generation(Generation& out, const CommonOptions& common, const EngineArgs& e) {
  bool batched = e.kind == "batched";
  out.decoder = open_decoder(common, 0, !batched);
  Decoder& d = out.decoder;
  if (!d.tokenizer) fail("serve: '", common.model, "' carries no tokenizer (a GGUF file needs tokenizer.ggml.tokens)");
  out.summary = d.config.summary();
  if (!batched) {
    out.engine = std::make_unique<serve::SequentialEngine>(*d.runner, *d.tokenizer);
    return;
  }
  serve::PagedLlamaOptions po;
  po.block_size = e.block_size;
  po.blocks = e.kv_blocks;
  po.context = common.capacity;
  po.compile = common.compile();
  po.refuse_unused_weights = d.refuse_unused_weights;
  out.paged = std::make_unique<serve::PagedLlama>(d.config, d.weights, po);
  serve::BatchedEngineOptions bo;
  bo.max_batch = e.max_batch;
  bo.prefill_tokens = e.prefill_chunk;
  out.engine = std::make_unique<serve::BatchedEngine>(*out.paged, *d.tokenizer, bo);
  const serve::PagedKvCache& c = out.paged->cache();
  out.summary += "\nbatched engine: up to " + std::to_string(e.max_batch) + " sequences, " + std::to_string(c.blocks_total()) +
                 " KV blocks of " + std::to_string(c.block_size()) + " positions, context " + std::to_string(out.paged->context());
}

}  // namespace

void add_serve_command(CLI::App& app) {
  struct Args {
    CommonOptions common;
    std::string host = "127.0.0.1", name;
    int port = 8080;
    int64_t max_queue = 256;
    bool quiet = false;
    std::string api_key;
    EngineArgs engine;
  };
  static Args a;
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API (completions, chat, embeddings)");
  a.common.add_to(cmd);
  cmd->add_option("--host", a.host, "Address to listen on");
  cmd->add_option("--port", a.port, "Port to listen on (0: any free port, printed at start)")->check(CLI::Range(0, 65535));
  cmd->add_option("--max-queue", a.max_queue, "Requests waiting beyond which new ones get 503 (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--quiet", a.quiet, "No line per request on stderr");
  cmd->add_option("--api-key", a.api_key, "Require `Authorization: Bearer KEY` on /v1/* (default: LUMEN_API_KEY, else none)")
      ->envname("LUMEN_API_KEY");
  cmd->add_option("--name", a.name, "The model id clients name (default: the model's file or directory name)");
  cmd->add_option("--engine", a.engine.kind, "batched: continuous batching over a paged KV cache; sequential: one request at a time")
      ->check(CLI::IsMember({"batched", "sequential"}));
  cmd->add_option("--max-batch", a.engine.max_batch, "Batched engine: sequences decoded together at most")->check(CLI::Range(1, 4096));
  cmd->add_option("--kv-blocks", a.engine.kv_blocks, "Batched engine: KV-cache blocks (0: 8192 positions, at least one whole context)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--kv-block-size", a.engine.block_size, "Batched engine: positions per KV-cache block")->check(CLI::Range(1, 1024));
  cmd->add_option("--prefill-chunk", a.engine.prefill_chunk, "Batched engine: prompt tokens prefilled per step at most")
      ->check(CLI::Range(1, 1 << 20));
  cmd->callback([] {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    auto start = std::chrono::steady_clock::now();
    a.common.progress = true;
    serve::ServedModel served;
    served.name = model_name(a.name, a.common.model);
    Generation generation;
    std::unique_ptr<models::SentenceEncoder> encoder;
    std::string summary;
    if (model_kind(a.common.model) == ModelKind::Encoder) {
      encoder = open_encoder(a.common);
      served.encoder = encoder.get();
      summary = encoder->config().summary();
    } else {
      open_generation(generation, a.common, a.engine);
      served.engine = generation.engine.get();
      served.tokenizer = generation.decoder.tokenizer.get();
      served.chat = generation.decoder.chat;
      summary = generation.summary;
    }
    serve::ServerOptions options;
    options.host = a.host;
    options.port = a.port;
    options.max_queue = a.max_queue;
    options.log_requests = !a.quiet;
    options.api_key = a.api_key;
    serve::HttpServer server(served, options);
    server.bind();
    double ready = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "%s\nready in %.2f s; serving '%s' on http://%s:%d\n", summary.c_str(), ready, served.name.c_str(),
                 a.host.c_str(), server.port());
    std::fflush(stderr);
    watch_signals(signals, server);
    server.serve();
    if (generation.engine) generation.engine->shutdown();
    std::fprintf(stderr, "lumen serve: stopped\n");
  });
}

}  // namespace lumen::tools

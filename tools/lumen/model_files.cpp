#include "tools/lumen/model_files.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "lumen/backend/cpu/thread_pool.h"
#include "lumen/core/error.h"
#include "lumen/io/gguf.h"
#include "lumen/models/fused_weights.h"
#include "lumen/models/llama_gguf.h"
#include "lumen/passes/precision.h"

namespace lumen::tools {

namespace fs = std::filesystem;

void CommonOptions::add_to(CLI::App* cmd, bool needs_model) {
  auto* m = cmd->add_option("--model,-m", model, "A GGUF file or a Hugging Face model directory");
  if (needs_model) m->required();
  cmd->add_option("--budget", budget_s, "Seconds of schedule search (0: heuristic schedules and the tuning cache)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--threads", threads, "CPU threads (default: all cores)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--backend", backend, "cpu, interp, opencl or cuda")->check(CLI::IsMember({"cpu", "interp", "opencl", "cuda"}));
  cmd->add_flag("--no-tuning-cache", no_tuning_cache, "Neither read nor write the tuning cache");
  cmd->add_option("--precision", precision, "fp32, bf16 or fp16: matmuls take operands rounded to it, accumulated in fp32")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  cmd->add_option("--capacity", capacity, "KV-cache positions for decoders (default: min(context, 2048))");
  cmd->add_option("--kv-cache", kv_cache,
                  "The KV cache's dtype: auto (f16 for quantized weights, else f32), f32, f16 or bf16")
      ->check(CLI::IsMember({"auto", "f32", "f16", "bf16"}));
}

CompileOptions CommonOptions::compile() const {
  if (threads > 0) cpu::ThreadPool::set_global_threads(threads);
  CompileOptions c;
  c.backend = backend_named(backend);
  c.search_budget_s = budget_s;
  c.tuning_cache = !no_tuning_cache;
  c.progress = progress;
  c.precision = passes::precision_named(precision);
  return c;
}

void add_sampling_options(CLI::App* cmd, models::SamplingOptions& sampling) {
  cmd->add_option("--temperature", sampling.temperature, "0: greedy")->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-k", sampling.top_k, "0: no limit")->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-p", sampling.top_p, "Nucleus sampling mass")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", sampling.seed, "Sampling seed");
}

ModelKind model_kind(const std::string& path) {
  if (fs::is_regular_file(path)) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    if (std::memcmp(magic, "GGUF", 4) == 0) return ModelKind::Decoder;
    fail("'", path, "' is not a GGUF file or a model directory");
  }
  if (!fs::is_directory(path)) fail("no model at '", path, "' (a GGUF file or a directory with config.json)");
  std::ifstream in(fs::path(path) / "config.json");
  if (!in) fail("'", path, "' has no config.json");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail("'", path, "/config.json' is not valid JSON (", e.what(), ")");
  }
  std::string type = j.value("model_type", std::string());
  if (type == "bert") return ModelKind::Encoder;
  if (type == "llama" || type == "mistral" || type == "qwen2" || type == "qwen3" || type == "phi3" || type == "gemma") {
    return ModelKind::Decoder;
  }
  fail("'", path, "': model_type '", type, "' is not supported (llama, mistral, qwen2, qwen3, phi3, gemma, bert)");
}

DecoderFiles load_decoder_files(const std::string& model, int64_t layers_override) {
  if (model_kind(model) != ModelKind::Decoder) fail("'", model, "' is an encoder, not a decoder (use `lumen embed`)");
  DecoderFiles d;
  if (fs::is_regular_file(model)) {
    io::GgufFile f = io::GgufFile::open(model);
    d.config = models::llama_config_from_gguf(f);
    d.weights = models::llama_weights_from_gguf(f, d.config);
    if (f.has("tokenizer.ggml.tokens")) {
      d.tokenizer = io::tokenizer_from_gguf(f);
      d.chat = models::chat_format_from_gguf(f, *d.tokenizer);
    }
  } else {
    d.config = models::LlamaConfig::from_directory(model);
    d.weights = models::llama_weights_from_directory(model, d.config);
    if (fs::exists(fs::path(model) / "tokenizer.json")) {
      d.tokenizer = io::load_tokenizer_json((fs::path(model) / "tokenizer.json").string());
      d.chat = models::chat_format_from_directory(model, *d.tokenizer);
    }
  }
  if (layers_override > 0 && layers_override < d.config.layers) {
    d.config.layers = layers_override;
    d.refuse_unused_weights = false;  // the later layers' weights stay unread on purpose
    if (!d.config.window_layers.empty()) d.config.window_layers.resize(static_cast<size_t>(layers_override));
  }
  return d;
}

Decoder open_decoder(const CommonOptions& o, int64_t layers_override, bool compile_runner) {
  DecoderFiles f = load_decoder_files(o.model, layers_override);
  models::LlamaRunnerOptions ro;
  ro.capacity = o.capacity;
  ro.kv_cache = models::kv_cache_named(o.kv_cache);
  ro.compile = o.compile();
  ro.refuse_unused_weights = f.refuse_unused_weights;
  Decoder d;
  d.tokenizer = std::move(f.tokenizer);
  d.chat = std::move(f.chat);
  d.config = f.config;
  d.weights = f.weights;
  d.refuse_unused_weights = f.refuse_unused_weights;
  if (compile_runner) d.runner = std::make_unique<models::LlamaRunner>(f.config, f.weights, ro);
  return d;
}

std::unique_ptr<models::SentenceEncoder> open_encoder(const CommonOptions& o) {
  if (model_kind(o.model) != ModelKind::Encoder) fail("'", o.model, "' is a decoder, not an encoder (use `lumen generate`)");
  models::SentenceEncoderOptions eo;
  eo.compile = o.compile();
  return std::make_unique<models::SentenceEncoder>(o.model, eo);
}

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      long v = std::stol(item, &used);
      if (used != item.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(item);
      ids.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      fail("--tokens: '", item, "' is not a token id (expected comma-separated non-negative integers)");
    }
  }
  if (ids.empty()) fail("--tokens: no token ids given");
  return ids;
}

}  // namespace lumen::tools

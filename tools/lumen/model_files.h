// Opening models for the command line: a GGUF file or a Hugging Face
// directory (config.json + safetensors + tokenizer.json), for Llama-family
// decoders and BERT-style sentence encoders.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "lumen/io/tokenizer/tokenizer.h"
#include "lumen/models/chat_session.h"
#include "lumen/models/llama_runner.h"
#include "lumen/models/sentence_encoder.h"

namespace lumen::tools {

enum class ModelKind { Decoder, Encoder };

// Options every model command takes.
struct CommonOptions {
  std::string model;
  double budget_s = 0;
  int threads = 0;
  std::string backend = "cpu";
  bool no_tuning_cache = false;
  int64_t capacity = 0;
  std::string kv_cache = "auto";  // --kv-cache: auto, f32, f16 or bf16 (LlamaRunnerOptions::kv_cache)
  bool progress = false;
  std::string precision = "fp32";  // --precision: fp32, bf16 or fp16 (lumen/passes/precision.h)

  void add_to(CLI::App* cmd, bool needs_model = true);
  CompileOptions compile() const;  // also applies --threads
};

// --temperature, --top-k, --top-p, --seed for commands that sample tokens.
void add_sampling_options(CLI::App* cmd, models::SamplingOptions& sampling);

ModelKind model_kind(const std::string& path);

// A decoder's files, before compiling anything.
struct DecoderFiles {
  models::LlamaConfig config;
  std::shared_ptr<io::WeightStore> weights;
  std::unique_ptr<io::Tokenizer> tokenizer;  // may be null (a GGUF file without a vocabulary)
  models::ChatFormat chat;
  bool refuse_unused_weights = true;         // false when layers were cut on purpose
};
DecoderFiles load_decoder_files(const std::string& model, int64_t layers_override = 0);

struct Decoder {
  models::LlamaConfig config;
  std::shared_ptr<io::WeightStore> weights;
  bool refuse_unused_weights = true;           // false when layers were cut on purpose
  std::unique_ptr<models::LlamaRunner> runner;  // null when not asked for
  std::unique_ptr<io::Tokenizer> tokenizer;  // may be null (a GGUF file without a vocabulary)
  models::ChatFormat chat;                    // the chat template and end-of-turn tokens, if any
};
// With `compile_runner` false only the files are read (a caller compiling
// its own programs from config and weights, e.g. lumen serve's batched engine).
Decoder open_decoder(const CommonOptions& o, int64_t layers_override = 0, bool compile_runner = true);
std::unique_ptr<models::SentenceEncoder> open_encoder(const CommonOptions& o);

// "1,2,3" -> ids; throws lumen::Error naming the bad entry.
std::vector<int32_t> parse_ids(const std::string& text);

}  // namespace lumen::tools

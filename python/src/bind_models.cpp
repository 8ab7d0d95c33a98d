// Bindings for the model runners (lumen.models): Llama-family decoders.
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <filesystem>

#include "bindings.h"
#include "lumen/passes/precision.h"
#include "lumen/models/fused_weights.h"
#include "lumen/models/llama_gguf.h"
#include "lumen/models/llama_runner.h"
#include "lumen/models/sentence_encoder.h"

namespace lumen::python {

namespace {

// A Hugging Face model directory: config.json plus safetensors weights.
// "auto", "on" or "off" (CompileOptions::int8_dot).
CompileOptions::Int8Dot int8_dot_named(const std::string& name) {
  if (name == "auto") return CompileOptions::Int8Dot::Auto;
  if (name == "on") return CompileOptions::Int8Dot::On;
  if (name == "off") return CompileOptions::Int8Dot::Off;
  fail("llama: int8_dot='", name, "': expected 'auto', 'on' or 'off'");
}

std::unique_ptr<models::LlamaRunner> load_llama(const std::string& path, int64_t capacity, const std::string& backend,
                                                double budget_s, bool tuning_cache, const std::string& cache_path,
                                                const std::string& precision = "fp32",
                                                const std::string& int8_dot = "off",
                                                const std::string& kv_cache = "auto") {
  namespace fs = std::filesystem;
  models::LlamaRunnerOptions o;
  o.kv_cache = models::kv_cache_named(kv_cache);
  o.compile.int8_dot = int8_dot_named(int8_dot);
  o.capacity = capacity;
  o.compile.precision = passes::precision_named(precision);
  o.compile.backend = backend_named(backend);
  o.compile.search_budget_s = budget_s;
  o.compile.tuning_cache = tuning_cache;
  o.compile.cache_path = cache_path;
  if (fs::is_regular_file(path)) {  // a GGUF file
    io::GgufFile file = io::GgufFile::open(path);
    models::LlamaConfig config = models::llama_config_from_gguf(file);
    return std::make_unique<models::LlamaRunner>(config, models::llama_weights_from_gguf(file, config), o);
  }
  if (!fs::is_directory(path)) {
    fail("llama: '", path, "' is neither a GGUF file nor a model directory (config.json + model.safetensors)");
  }
  models::LlamaConfig config = models::LlamaConfig::from_directory(path);
  return std::make_unique<models::LlamaRunner>(config, models::llama_weights_from_directory(path, config), o);
}

// A padded batch (ids [batch, seq], mask) through one of the encoder's
// programs, run without the GIL; the result is copied out of the arena.
template <Array (models::SentenceEncoder::*Run)(const Array&, const Array&)>
nb::object padded_batch(models::SentenceEncoder& e, nb::handle ids, nb::handle mask) {
  Array i = array_from_python(ids, DType::I32, "ids"), m = array_from_python(mask, DType::F32, "mask");
  Array out;
  {
    nb::gil_scoped_release release;
    out = (e.*Run)(i, m);
  }
  return array_to_python(out.clone());
}

nb::tuple generate(models::LlamaRunner& r, const std::vector<int32_t>& prompt, int64_t max_new, double temperature,
                   int64_t top_k, double top_p, uint64_t seed, bool continue_) {
  models::Sampler sampler({temperature, top_k, top_p, seed});
  models::GenerationStats stats;
  std::vector<int32_t> out;
  {
    nb::gil_scoped_release release;
    out = r.generate(prompt, max_new, sampler, {}, &stats, continue_);
  }
  nb::dict s;
  s["prompt_tokens"] = stats.prompt_tokens;
  s["generated_tokens"] = stats.generated_tokens;
  s["stop_reason"] = models::stop_reason_name(stats.stop_reason);
  s["prefill_tokens_per_second"] = stats.prefill_tokens_per_second();
  s["decode_tokens_per_second"] = stats.decode_tokens_per_second();
  s["prefill_seconds"] = stats.prefill_seconds;
  s["decode_seconds"] = stats.decode_seconds;
  if (stats.stop_reason == models::StopReason::ContextFull) {
    std::string message = "generate: the KV cache is full (capacity " + std::to_string(r.capacity()) + " positions): " +
                          std::to_string(out.size()) + " of " + std::to_string(max_new) +
                          " tokens generated (load the model with a larger capacity)";
    if (PyErr_WarnEx(PyExc_RuntimeWarning, message.c_str(), 1) != 0) throw nb::python_error();
  }
  return nb::make_tuple(out, s);
}

}  // namespace

void bind_models(nb::module_& m) {
  nb::module_ models = m.def_submodule("models", "Model runners built on the compiler");
  nb::class_<models::LlamaRunner>(models, "Llama", "A Llama-family decoder compiled with a persistent KV cache.")
      .def("__init__",
           [](models::LlamaRunner* self, const std::string& path, int64_t capacity, const std::string& backend,
              double budget_s, bool tuning_cache, const std::string& cache_path, const std::string& precision,
              const std::string& int8_dot, const std::string& kv_cache) {
             auto r = load_llama(path, capacity, backend, budget_s, tuning_cache, cache_path, precision, int8_dot,
                                 kv_cache);
             new (self) models::LlamaRunner(std::move(*r));
           },
           nb::arg("path"), nb::arg("capacity") = 0, nb::arg("backend") = "cpu", nb::arg("budget_s") = 0.0,
           nb::arg("tuning_cache") = true, nb::arg("cache_path") = "", nb::arg("precision") = "fp32",
           nb::arg("int8_dot") = "off", nb::arg("kv_cache") = "auto",
           "precision: \"fp32\", \"bf16\" or \"fp16\" (matmuls take operands rounded to it, accumulated in fp32). "
           "int8_dot: integer dot products for quantized weights (decode): 'off' (the default), 'auto' (a candidate "
           "the graph search measures when budget_s > 0; with budget_s 0 the heuristic's choice: on where the CPU "
           "has AVX512-VNNI) or 'on'. LUMEN_INT8_DOT overrides it. "
           "kv_cache: the KV cache's dtype, 'auto' (f16 for block-quantized GGUF weights as in llama.cpp, else f32), "
           "'f32', 'f16' or 'bf16'.")
      .def_prop_ro("kv_cache", [](const models::LlamaRunner& r) { return std::string(dtype_name(r.kv_cache_dtype())); },
                   "The KV cache's dtype: 'f32', 'f16' or 'bf16'.")
      .def_prop_ro("kv_cache_bytes", &models::LlamaRunner::kv_cache_bytes, "Bytes the key and value caches occupy.")
      .def("forward",
           [](models::LlamaRunner& r, const std::vector<int32_t>& tokens) {
             std::vector<float> logits;
             {
               nb::gil_scoped_release release;
               logits = r.forward(tokens);
             }
             return array_to_python(Array::from_floats(logits, {static_cast<int64_t>(logits.size())}));
           },
           nb::arg("tokens"), "Feeds tokens at the current position; returns the last position's logits.")
      .def("forward_all",
           [](models::LlamaRunner& r, const std::vector<int32_t>& tokens) {
             Array a;
             {
               nb::gil_scoped_release release;
               a = r.forward_all(tokens);
             }
             return array_to_python(a.clone());
           },
           nb::arg("tokens"), "Feeds tokens at the current position; returns logits [1, seq, vocab].")
      .def("generate", &generate, nb::arg("prompt"), nb::arg("max_new_tokens") = 32, nb::arg("temperature") = 0.0,
           nb::arg("top_k") = 0, nb::arg("top_p") = 1.0, nb::arg("seed") = 0, nb::arg("continue_") = false,
           "Prefills the prompt and samples new tokens; returns (tokens, stats). A fresh sequence each call unless\n"
           "continue_=True (then the prompt extends the previous call's sequence, its last token included).\n"
           "stats['stop_reason'] is 'eos', 'length' or 'context_full' (the KV cache is full: fewer tokens than\n"
           "asked, with a RuntimeWarning).")
      .def("reset", &models::LlamaRunner::reset)
      .def_prop_ro("unused_weights", &models::LlamaRunner::unused_weights,
                   "Checkpoint tensors the model does not read (only known-unneeded ones, e.g. rotary inv_freq buffers).")
      .def_prop_ro("eos_tokens", [](const models::LlamaRunner& r) { return r.config().eos_tokens; })
      .def_prop_ro("position", &models::LlamaRunner::position)
      .def_prop_ro("capacity", &models::LlamaRunner::capacity)
      .def_prop_ro("compile_seconds", &models::LlamaRunner::compile_seconds)
      .def_prop_ro("weight_bytes", &models::LlamaRunner::weight_bytes, "Bytes the weights occupy in memory.")
      .def_prop_ro("summary", [](const models::LlamaRunner& r) { return r.config().summary(); })
      .def("report", &models::LlamaRunner::report)
      .def_prop_ro("stats", [](models::LlamaRunner& r) {
        nb::dict d;
        d["decode"] = r.decode_program().stats();
        d["prefill"] = r.prefill_program().stats();
        return d;
      }, "Compilation and memory numbers of the decode and prefill programs.");

  nb::class_<models::SentenceEncoder>(models, "SentenceEncoder",
                                      "A BERT-style sentence-transformers model compiled to embed text.")
      .def("__init__",
           [](models::SentenceEncoder* self, const std::string& path, const std::string& backend, double budget_s,
              bool tuning_cache, int64_t max_length) {
             models::SentenceEncoderOptions o;
             o.compile.backend = backend_named(backend);
             o.compile.search_budget_s = budget_s;
             o.compile.tuning_cache = tuning_cache;
             o.max_length = max_length;
             new (self) models::SentenceEncoder(path, o);
           },
           nb::arg("path"), nb::arg("backend") = "cpu", nb::arg("budget_s") = 0.0, nb::arg("tuning_cache") = true,
           nb::arg("max_length") = 0)
      .def("embed",
           [](models::SentenceEncoder& e, const std::vector<std::string>& texts, int64_t batch_size) {
             Array a;
             {
               nb::gil_scoped_release release;
               a = e.embed(texts, batch_size);
             }
             return array_to_python(a);
           },
           nb::arg("texts"), nb::arg("batch_size") = 32, "Embeddings [len(texts), dim].")
      .def("pooled", &padded_batch<&models::SentenceEncoder::pooled>, nb::arg("ids"), nb::arg("mask"),
           "Pooled embeddings of a padded batch [batch, seq].")
      .def("hidden", &padded_batch<&models::SentenceEncoder::hidden>, nb::arg("ids"), nb::arg("mask"),
           "Last hidden states [batch, seq, dim] of a padded batch.")
      .def("tokenize", &models::SentenceEncoder::tokenize, nb::arg("text"))
      .def_prop_ro("normalizes", &models::SentenceEncoder::normalizes)
      .def_prop_ro("pooling", [](const models::SentenceEncoder& e) { return std::string(models::pooling_name(e.pooling())); })
      .def_prop_ro("unused_weights", &models::SentenceEncoder::unused_weights,
                   "Checkpoint tensors the encoder does not read (only known-unneeded ones, e.g. BERT's pooler).")
      .def_prop_ro("max_length", &models::SentenceEncoder::max_length)
      .def_prop_ro("compile_seconds", &models::SentenceEncoder::compile_seconds)
      .def_prop_ro("summary", [](const models::SentenceEncoder& e) { return e.config().summary(); })
      .def_prop_ro("stats", [](models::SentenceEncoder& e) { return e.program().stats(); })
      .def("report", [](models::SentenceEncoder& e) { return e.program().report(); },
           "The search report and, with LUMEN_PROFILE=1, time per kernel.");
}

}  // namespace lumen::python

// libFuzzer target: the GGUF reader — header, typed metadata (through every
// accessor), the tensor index (every byte a tensor claims is read) — then a
// Llama config and weights load as `lumen generate` does (quantized blocks
// unpacked, q/k rows un-interleaved). Every input either loads or raises
// lumen::Error; a crash, a sanitizer report or another exception fails.
#include <cstdint>

#include "lumen/core/error.h"
#include "lumen/io/gguf.h"
#include "lumen/models/llama_gguf.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

template <typename F>
void may_fail(F&& f) {
  try {
    f();
  } catch (const lumen::Error&) {
  }
}

double read_metadata(const lumen::io::GgufFile& f) {
  double sum = 0;
  for (const auto& entry : f.metadata()) {
    const std::string& key = entry.first;  // (clang 14 lambdas cannot capture structured bindings)
    const lumen::io::GgufValue& value = entry.second;
    const lumen::io::GgufValue* v = &value;
    if (value.is_array && !value.array.empty()) v = &value.array.back();
    may_fail([&] { sum += static_cast<double>(v->as_int(key)); });
    may_fail([&] { sum += v->as_double(key); });
    may_fail([&] { sum += v->as_bool(key) ? 1 : 0; });
    may_fail([&] { sum += static_cast<double>(v->as_string(key).size()); });
    sum += static_cast<double>(value.type_string().size());
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = lumen::fuzz::as_file(data, size);
  try {
    lumen::io::GgufFile f = lumen::io::GgufFile::open(path);
    double sum = read_metadata(f);
    for (const lumen::io::GgufTensor& t : f.tensors()) {
      const unsigned char* p = f.data(t);
      for (uint64_t i = 0; i < t.bytes; ++i) sum += p[i];  // touch every byte it claims
      may_fail([&] { sum += static_cast<double>(f.readable_format(t).block_bytes); });
      may_fail([&] { sum += static_cast<double>(f.get(t.name).numel()); });
    }
    lumen::models::LlamaConfig config = lumen::models::llama_config_from_gguf(f);
    auto weights = lumen::models::llama_weights_from_gguf(f, config);
    sum += static_cast<double>(weights->stored_bytes());
    lumen::fuzz::sink = sum;  // keeps the reads
  } catch (const lumen::Error&) {
  }
  return 0;
}

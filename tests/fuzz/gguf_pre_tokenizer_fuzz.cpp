// libFuzzer target: bytes -> text, split with the rules of every GGUF
// pre-tokenizer lumen knows (llama.cpp's). The pieces must be non-empty and
// concatenate back to the text (invalid UTF-8 read as llama.cpp reads it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "lumen/core/error.h"
#include "lumen/io/tokenizer/llama_split.h"

using namespace lumen::io::tokenizer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::string> names = gguf_pre_tokenizer_names();
  std::string text(reinterpret_cast<const char*>(data), size);
  std::string clean;
  for (uint32_t cp : llama_codepoints(text)) clean += llama_utf8(cp);
  for (const std::string& name : names) {
    try {
      std::string joined;
      for (const std::string& w : llama_regex_split(text, gguf_pre_tokenizer(name).regexes)) {
        if (w.empty()) std::abort();
        joined += w;
      }
      if (joined != clean) std::abort();
    } catch (const lumen::Error&) {
      // a regex over its match limit: reported, fine
    }
  }
  return 0;
}

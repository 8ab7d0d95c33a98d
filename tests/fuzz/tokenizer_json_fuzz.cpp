// libFuzzer target: bytes -> tokenizer.json. A file that parses is used to
// encode and decode a fixed text (with and without special tokens). Passing
// means every input either loads or raises lumen::Error: no crash, no other
// exception, no sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "lumen/core/error.h"
#include "lumen/io/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string kText =
      "Hello, world! caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80 12345\n\n    x  <|im_start|>[CLS] \xFF end";
  std::string json(reinterpret_cast<const char*>(data), size);
  try {
    auto tokenizer = lumen::io::parse_tokenizer_json(json, "fuzz");
    for (bool special : {true, false}) {
      std::vector<int32_t> ids = tokenizer->encode(kText, special, special);
      tokenizer->decode(ids, special);
      ids.push_back(-1);
      ids.push_back(INT32_MAX);
      tokenizer->decode(ids, !special);
    }
    tokenizer->token_to_id("hello");
    if (tokenizer->vocab_size() > 0) tokenizer->id_to_token(0);
  } catch (const lumen::Error&) {
    // bad input, reported clearly: fine
  }
  return 0;
}

// libFuzzer target: the safetensors reader. Every input either loads (and
// every tensor's bytes can be read) or raises lumen::Error; anything else —
// a crash, a sanitizer report, another exception, a huge allocation — fails.
#include <cstdint>

#include "lumen/core/error.h"
#include "lumen/io/safetensors.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = lumen::fuzz::as_file(data, size);
  try {
    lumen::io::SafetensorsFile f = lumen::io::SafetensorsFile::open(path);
    double sum = 0;
    for (const auto& e : f.entries()) {
      lumen::Array a = f.get(e.name);
      for (int64_t k = 0; k < a.numel(); ++k) sum += a.get(k);  // touch every element it claims
      (void)f.entry(e.name);
    }
    for (const auto& [k, v] : f.metadata()) sum += static_cast<double>(k.size() + v.size());
    (void)f.contains("missing");
    lumen::fuzz::sink = sum;  // keeps the reads
  } catch (const lumen::Error&) {
  }
  return 0;
}

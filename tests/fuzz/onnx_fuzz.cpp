// libFuzzer target: the ONNX reader and importer. Every input either imports
// (a graph whose every weight can be read) or raises lumen::Error; anything
// else — a crash, a sanitizer report, another exception, a huge allocation
// — fails.
#include <cstdint>

#include "lumen/core/error.h"
#include "lumen/io/onnx/model.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = lumen::fuzz::as_file(data, size);
  try {
    lumen::onnx::Model m = lumen::onnx::load(path);
    double sum = static_cast<double>(m.graph->size());
    for (const auto& [name, a] : m.weights) {
      for (int64_t k = 0; k < a.numel(); ++k) sum += a.get(k);  // touch every element it claims
      sum += static_cast<double>(name.size());
    }
    lumen::fuzz::sink = sum;
  } catch (const lumen::Error&) {
  }
  return 0;
}

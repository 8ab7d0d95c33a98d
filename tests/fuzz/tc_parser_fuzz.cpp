// libFuzzer target: the tensor comprehension parser, checker and lowering
// (tests/tc/exercise.h). Every text either defines and applies or raises
// lumen::Error; a crash, a sanitizer report or another exception fails.
#include <cstdint>
#include <string_view>

#include "tests/tc/exercise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lumen::tc::testing::exercise(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}

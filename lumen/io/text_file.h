// Reading a whole text file (configs, tokenizer.json) with a clear error.
#pragma once

#include <string>

namespace lumen::io {

// The file's bytes; throws lumen::Error "<what>: cannot open '<path>'".
std::string read_text_file(const std::string& path, const char* what);

}  // namespace lumen::io

#include "lumen/io/text_file.h"

#include <fstream>
#include <sstream>

#include "lumen/core/error.h"

namespace lumen::io {

std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) fail(what, ": cannot open '", path, "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace lumen::io

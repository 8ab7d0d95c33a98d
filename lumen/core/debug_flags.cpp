#include "lumen/core/debug_flags.h"

#include <cstdlib>
#include <cstring>

namespace lumen {

bool debug_enabled(const char* topic) {
  static const char* flags = std::getenv("LUMEN_DEBUG");
  return flags && std::strstr(flags, topic);
}

}  // namespace lumen

// Compiles generated C++ into a shared object and loads it. Objects are
// cached on disk by a hash of the source, the ISA flags and the compiler's
// version, so a second compile of the same program costs a dlopen. Writes go
// to a temporary file renamed into place: a crash never leaves a half-written
// object, and two processes compiling the same source both succeed.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace lumen::cpu {

class Library {
 public:
  Library(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  // The address of an exported function; throws Error if it is missing.
  void* symbol(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  void* handle_;
  std::string path_;
};

struct CompileInfo {
  bool cache_hit = false;
  double seconds = 0;  // time spent in the compiler (0 on a cache hit)
  std::string object_path;
};

// LUMEN_CACHE_DIR, else $XDG_CACHE_HOME/lumen, else ~/.cache/lumen.
std::string cache_dir();
// `g++ --version`'s first line (LUMEN_CXX picks another compiler).
const std::string& compiler_version();

std::shared_ptr<Library> compile_and_load(const std::string& source, CompileInfo* info = nullptr);
// Several translation units, compiled in parallel and linked into one object.
std::shared_ptr<Library> compile_and_load(const std::vector<std::string>& parts, CompileInfo* info = nullptr);

// FNV-1a, as 16 hex digits.
std::string hash_hex(const std::string& text);

}  // namespace lumen::cpu

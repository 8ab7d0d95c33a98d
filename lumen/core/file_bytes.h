// Whole files as bytes, for the on-disk caches (compiled objects, GPU
// binaries): read all of one, or write one through a temporary file renamed
// into place, so a reader never sees a half-written entry.
#pragma once

#include <string>

namespace lumen {

// The file's bytes; empty when it cannot be read.
std::string read_file_bytes(const std::string& path);
// Writes `bytes` to `path` atomically (a per-process temporary, then rename);
// false when it could not (a cache that cannot be written is not fatal).
bool write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace lumen

// safetensors (Hugging Face): an 8-byte little-endian header length, a JSON
// header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__":
// {...}}, then the tensor bytes. Read through a memory map: tensors borrow
// the file's bytes (no copy) when their dtype and alignment allow.
//
// Every field is validated before use (header length, JSON, dtypes, shapes,
// offsets against the file size, element count overflow), so a malformed or
// hostile file gives a lumen::Error naming the file and the tensor — never a
// crash or a huge allocation.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lumen/core/array.h"
#include "lumen/io/mapped_file.h"

namespace lumen::io {

struct SafetensorsEntry {
  std::string name;
  std::string file_dtype;  // as written: "F32", "BF16", "I64", ...
  DType dtype;             // what get() returns (F64 -> f32, I64 -> i32)
  std::vector<int64_t> shape;
  size_t begin = 0, end = 0;  // byte range within the data section
};

class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path);

  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(const std::string& name) const;
  const SafetensorsEntry& entry(const std::string& name) const;  // throws naming close matches
  // The tensor's data: borrowed from the map when possible, else converted.
  Array get(const std::string& name) const;
  const std::string& path() const { return file_->path(); }

 private:
  std::shared_ptr<const MappedFile> file_;
  size_t data_start_ = 0;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Writes tensors (and string metadata) as a safetensors file. The file is
// written beside `path` and renamed into place, so a reader never sees half.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Array>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace lumen::io

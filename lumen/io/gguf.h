// GGUF (llama.cpp's model format): a header, typed metadata key/values, a
// tensor index, then aligned tensor data. Read through a memory map.
//
// Every count, length and offset is checked against the file before it is
// used (strings, arrays, nested arrays, dims, tensor extents), so a truncated
// or hostile file gives a lumen::Error naming the file and the field — never
// a crash or a huge allocation.
//
// Shapes are reported in PyTorch order (GGUF lists the fastest dim first).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "lumen/core/array.h"
#include "lumen/io/ggml_blocks.h"
#include "lumen/io/mapped_file.h"

namespace lumen::io {

// GGUF's name for a metadata value type: "u8", "bool", "string", ...
const char* gguf_value_type_name(uint32_t type);

// A metadata value: a number, a bool, a string, or an array of one of those.
// The accessors take the key for their message: a value of another type is a
// lumen::Error naming the key, its type and the one expected.
struct GgufValue {
  using Scalar = std::variant<int64_t, uint64_t, double, bool, std::string>;
  Scalar scalar;
  std::vector<GgufValue> array;  // when is_array
  bool is_array = false;
  uint32_t type = 0;  // the GGUF value type (element type for arrays)

  int64_t as_int(const std::string& key) const;
  double as_double(const std::string& key) const;
  bool as_bool(const std::string& key) const;  // a GGUF bool only (as llama.cpp reads it)
  const std::string& as_string(const std::string& key) const;
  std::string type_string() const;  // "u32", "array of string"

 private:
  [[noreturn]] void wrong_type(const std::string& key, const char* expected) const;
};

struct GgufTensor {
  std::string name;
  uint32_t type = 0;
  std::vector<int64_t> shape;  // PyTorch order
  uint64_t offset = 0;         // within the data section
  uint64_t bytes = 0;
};

class GgufFile {
 public:
  static GgufFile open(const std::string& path);

  uint32_t version() const { return version_; }
  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  bool has(const std::string& key) const { return metadata_.count(key) > 0; }
  const GgufValue& at(const std::string& key) const;  // throws naming the key
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor& tensor(const std::string& name) const;
  // The block format of a tensor whose values lumen can load; otherwise a
  // lumen::Error naming the tensor, its type and the types lumen reads. (The
  // index accepts every type ggml_blocks knows, so metadata and other tensors
  // of a file stay readable.)
  const GgmlBlockFormat& readable_format(const GgufTensor& t) const;

  // The raw bytes of a tensor (valid while this file or an Array from it lives).
  const unsigned char* data(const GgufTensor& t) const { return file_->data() + data_start_ + t.offset; }
  // An F32 / F16 / BF16 tensor as an Array (borrowed from the map when aligned).
  Array get(const std::string& name) const;
  std::shared_ptr<const MappedFile> file() const { return file_; }
  const std::string& path() const { return file_->path(); }

 private:
  std::shared_ptr<const MappedFile> file_;
  uint32_t version_ = 0;
  size_t data_start_ = 0;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> index_;
};

}  // namespace lumen::io

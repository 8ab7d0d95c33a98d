#include "lumen/io/gguf.h"

#include <cstring>

#include "lumen/core/error.h"

namespace lumen::io {

namespace {

constexpr uint64_t kMaxStringBytes = 1ull << 26;  // 64 MiB: any real key, value or vocabulary entry is far smaller
constexpr uint32_t kMaxDims = 8;
constexpr int kMaxNesting = 4;

enum ValueType : uint32_t { U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 };

// A bounds-checked little-endian cursor over the mapped file.
class Cursor {
 public:
  Cursor(const MappedFile& f) : f_(f) {}
  size_t position() const { return pos_; }
  uint64_t remaining() const { return f_.size() - pos_; }
  void seek(size_t p) { pos_ = p; }

  const unsigned char* take(uint64_t n, const char* what) {
    if (n > f_.size() - pos_) fail("gguf '", f_.path(), "': truncated while reading ", what, " at byte ", pos_);
    const unsigned char* p = f_.data() + pos_;
    pos_ += static_cast<size_t>(n);
    return p;
  }
  template <typename T>
  T read(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }
  std::string string(const char* what) {
    uint64_t n = read<uint64_t>(what);
    if (n > kMaxStringBytes || n > remaining()) {
      fail("gguf '", f_.path(), "': ", what, " claims ", n, " bytes (at byte ", pos_, ", ", remaining(), " left in the file)");
    }
    const unsigned char* p = take(n, what);
    return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
  }

 private:
  const MappedFile& f_;
  size_t pos_ = 0;
};

// Bytes one value of each type takes in the file at least (an array: its type and count).
uint64_t min_value_bytes(uint32_t type) {
  switch (type) {
    case U8: case I8: case BOOL: return 1;
    case U16: case I16: return 2;
    case U32: case I32: case F32: return 4;
    case U64: case I64: case F64: case STRING: return 8;
    case ARRAY: return 12;
    default: return 0;  // unknown
  }
}

// Reads metadata values. Array lengths are bounded by the bytes left in the
// file, and all arrays together by a budget proportional to the file size
// (each element costs sizeof(GgufValue) in memory), before anything is allocated.
struct ValueReader {
  Cursor& c;
  const std::string& path;
  uint64_t element_budget;

  GgufValue read(uint32_t type, const std::string& key, int depth) {
    GgufValue v;
    v.type = type;
    switch (type) {
      case U8: v.scalar = static_cast<uint64_t>(c.read<uint8_t>("a value")); break;
      case I8: v.scalar = static_cast<int64_t>(c.read<int8_t>("a value")); break;
      case U16: v.scalar = static_cast<uint64_t>(c.read<uint16_t>("a value")); break;
      case I16: v.scalar = static_cast<int64_t>(c.read<int16_t>("a value")); break;
      case U32: v.scalar = static_cast<uint64_t>(c.read<uint32_t>("a value")); break;
      case I32: v.scalar = static_cast<int64_t>(c.read<int32_t>("a value")); break;
      case U64: v.scalar = c.read<uint64_t>("a value"); break;
      case I64: v.scalar = c.read<int64_t>("a value"); break;
      case F32: v.scalar = static_cast<double>(c.read<float>("a value")); break;
      case F64: v.scalar = c.read<double>("a value"); break;
      case BOOL: v.scalar = c.read<uint8_t>("a value") != 0; break;
      case STRING: v.scalar = c.string("a string value"); break;
      case ARRAY: read_array(v, key, depth); break;
      default: fail("gguf '", path, "': metadata '", escape_bytes(key), "' has unknown value type ", type);
    }
    return v;
  }

  void read_array(GgufValue& v, const std::string& key, int depth) {
    if (depth >= kMaxNesting) fail("gguf '", path, "': metadata '", escape_bytes(key), "' nests arrays too deeply");
    uint32_t element = c.read<uint32_t>("an array type");
    uint64_t count = c.read<uint64_t>("an array length");
    uint64_t least = min_value_bytes(element);
    if (least == 0) fail("gguf '", path, "': metadata '", escape_bytes(key), "' is an array of unknown value type ", element);
    if (count > c.remaining() / least) {
      fail("gguf '", path, "': metadata '", escape_bytes(key), "' claims ", count, " array elements of ",
           gguf_value_type_name(element), " but only ", c.remaining(), " bytes are left in the file (truncated?)");
    }
    if (count > element_budget) {
      fail("gguf '", path, "': metadata '", escape_bytes(key), "' claims ", count,
           " more array elements than a file of this size can reasonably hold");
    }
    element_budget -= count;
    v.is_array = true;
    v.type = element;
    v.array.reserve(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i) v.array.push_back(read(element, key, depth + 1));
  }
};

}  // namespace

const char* gguf_value_type_name(uint32_t type) {
  static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
  return type < sizeof(names) / sizeof(names[0]) ? names[type] : "unknown";
}

std::string GgufValue::type_string() const {
  return is_array ? std::string("array of ") + gguf_value_type_name(type) : gguf_value_type_name(type);
}

void GgufValue::wrong_type(const std::string& key, const char* expected) const {
  fail("gguf: metadata '", escape_bytes(key), "' is ", type_string(), ", expected ", expected);
}

int64_t GgufValue::as_int(const std::string& key) const {
  if (!is_array) {
    if (auto* i = std::get_if<int64_t>(&scalar)) return *i;
    if (auto* u = std::get_if<uint64_t>(&scalar)) {
      if (*u > static_cast<uint64_t>(INT64_MAX)) fail("gguf: metadata '", escape_bytes(key), "' = ", *u, " is too large");
      return static_cast<int64_t>(*u);
    }
  }
  wrong_type(key, "an integer");
}

double GgufValue::as_double(const std::string& key) const {
  if (!is_array) {
    if (auto* d = std::get_if<double>(&scalar)) return *d;
    if (std::holds_alternative<int64_t>(scalar) || std::holds_alternative<uint64_t>(scalar)) return static_cast<double>(as_int(key));
  }
  wrong_type(key, "a number");
}

bool GgufValue::as_bool(const std::string& key) const {
  if (!is_array) {
    if (auto* b = std::get_if<bool>(&scalar)) return *b;
  }
  wrong_type(key, "bool");
}

const std::string& GgufValue::as_string(const std::string& key) const {
  if (!is_array) {
    if (auto* s = std::get_if<std::string>(&scalar)) return *s;
  }
  wrong_type(key, "a string");
}

GgufFile GgufFile::open(const std::string& path) {
  GgufFile g;
  g.file_ = MappedFile::open(path);
  Cursor c(*g.file_);
  const unsigned char* magic = c.take(4, "the magic number");
  if (std::memcmp(magic, "GGUF", 4) != 0) fail("gguf '", path, "': not a GGUF file (the magic number is not 'GGUF')");
  g.version_ = c.read<uint32_t>("the version");
  if (g.version_ < 2 || g.version_ > 3) fail("gguf '", path, "': version ", g.version_, " is not supported (2 or 3)");
  uint64_t tensor_count = c.read<uint64_t>("the tensor count");
  uint64_t kv_count = c.read<uint64_t>("the metadata count");
  // Each entry takes well over 8 bytes: counts beyond the file size are lies.
  if (tensor_count > g.file_->size() / 8 || kv_count > g.file_->size() / 8) {
    fail("gguf '", path, "': claims ", tensor_count, " tensors and ", kv_count, " metadata entries in a ", g.file_->size(),
         "-byte file");
  }
  // Every array element costs sizeof(GgufValue) (~72 bytes) in memory: all
  // arrays together may hold one element per 4 bytes of file (a vocabulary's
  // strings take 9 or more each), so memory stays within ~20x the file size.
  ValueReader values{c, path, g.file_->size() / 4 + 65536};
  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key = c.string("a metadata key");
    uint32_t type = c.read<uint32_t>("a metadata type");
    if (g.metadata_.count(key)) fail("gguf '", path, "': metadata '", escape_bytes(key), "' appears twice");
    g.metadata_[key] = values.read(type, key, 0);
  }
  uint64_t alignment = 32;
  if (g.has("general.alignment")) {
    int64_t a = g.at("general.alignment").as_int("general.alignment");
    if (a <= 0 || a > 65536 || (a & (a - 1)) != 0) fail("gguf '", path, "': general.alignment ", a, " is not a power of two");
    alignment = static_cast<uint64_t>(a);
  }
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensor t;
    t.name = c.string("a tensor name");
    uint32_t dims = c.read<uint32_t>("a tensor rank");
    if (dims == 0 || dims > kMaxDims) fail("gguf '", path, "': tensor '", escape_bytes(t.name), "' has rank ", dims);
    std::vector<int64_t> ne;
    uint64_t numel = 1;
    for (uint32_t d = 0; d < dims; ++d) {
      uint64_t n = c.read<uint64_t>("a tensor dim");
      if (n > (1ull << 40) || __builtin_mul_overflow(numel, n, &numel)) {
        fail("gguf '", path, "': tensor '", escape_bytes(t.name), "' has an absurd dim ", n);
      }
      ne.push_back(static_cast<int64_t>(n));
    }
    t.shape.assign(ne.rbegin(), ne.rend());
    t.type = c.read<uint32_t>("a tensor type");
    t.offset = c.read<uint64_t>("a tensor offset");
    const GgmlBlockFormat* format = ggml_block_format(t.type);
    if (!format) {
      fail("gguf '", path, "': tensor '", escape_bytes(t.name), "' has unknown type ", t.type, "; lumen reads ", ggml_readable_types());
    }
    if (ne[0] % format->block_elements != 0) {
      fail("gguf '", path, "': tensor '", escape_bytes(t.name), "' has ", ne[0], " elements per row, not a multiple of the ",
           format->name, " block of ", format->block_elements);
    }
    if (__builtin_mul_overflow(numel / format->block_elements, uint64_t{format->block_bytes}, &t.bytes)) {
      fail("gguf '", path, "': tensor '", escape_bytes(t.name), "' of ", numel, " ", format->name, " elements is absurdly large");
    }
    if (t.offset % alignment != 0) fail("gguf '", path, "': tensor '", escape_bytes(t.name), "' offset ", t.offset, " is not aligned to ", alignment);
    if (g.index_.count(t.name)) fail("gguf '", path, "': tensor '", escape_bytes(t.name), "' appears twice");
    g.index_[t.name] = g.tensors_.size();
    g.tensors_.push_back(std::move(t));
  }
  g.data_start_ = (c.position() + alignment - 1) / alignment * alignment;
  if (g.data_start_ > g.file_->size()) fail("gguf '", path, "': truncated before the tensor data");
  uint64_t data_size = g.file_->size() - g.data_start_;
  for (const GgufTensor& t : g.tensors_) {
    if (t.offset > data_size || t.bytes > data_size - t.offset) {
      fail("gguf '", path, "': tensor '", escape_bytes(t.name), "' (", ggml_type_label(t.type), ", ", t.bytes, " bytes at offset ", t.offset,
           ") lies outside the ",
           data_size, "-byte data section (truncated file?)");
    }
  }
  return g;
}

const GgufValue& GgufFile::at(const std::string& key) const {
  auto it = metadata_.find(key);
  if (it == metadata_.end()) fail("gguf '", path(), "': no metadata '", escape_bytes(key), "'");
  return it->second;
}

const GgufTensor& GgufFile::tensor(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) fail("gguf '", path(), "': no tensor named '", escape_bytes(name), "' (", tensors_.size(), " tensors)");
  return tensors_[it->second];
}

const GgmlBlockFormat& GgufFile::readable_format(const GgufTensor& t) const {
  const GgmlBlockFormat* f = ggml_block_format(t.type);
  if (!f || !f->readable) {
    fail("gguf '", path(), "': tensor '", escape_bytes(t.name), "' has type ", ggml_type_label(t.type), "; lumen reads ",
         ggml_readable_types(), " (requantize the file with llama.cpp's llama-quantize, e.g. to Q8_0 or Q4_1)");
  }
  return *f;
}

Array GgufFile::get(const std::string& name) const {
  const GgufTensor& t = tensor(name);
  DType dtype;
  switch (static_cast<GgmlType>(t.type)) {
    case GgmlType::F32: dtype = DType::F32; break;
    case GgmlType::F16: dtype = DType::F16; break;
    case GgmlType::BF16: dtype = DType::BF16; break;
    case GgmlType::F64: dtype = DType::F64; break;
    case GgmlType::I64: dtype = DType::I64; break;
    default:
      fail("gguf '", path(), "': tensor '", escape_bytes(name), "' is ", ggml_type_label(t.type),
           "; get() reads F32, F16, BF16, F64 and I64");
  }
  const unsigned char* p = data(t);
  if (reinterpret_cast<uintptr_t>(p) % dtype_size(dtype) == 0) {
    std::shared_ptr<void> keep(std::const_pointer_cast<MappedFile>(file_));
    return Array::borrow(const_cast<unsigned char*>(p), dtype, t.shape, keep);
  }
  Array out(dtype, t.shape);
  std::memcpy(out.data(), p, static_cast<size_t>(t.bytes));
  return out;
}

}  // namespace lumen::io

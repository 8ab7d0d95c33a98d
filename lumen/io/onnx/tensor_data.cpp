#include "lumen/io/onnx/tensor_data.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "lumen/core/error.h"
#include "lumen/io/onnx/narrow_types.h"
#include "onnx/onnx.pb.h"

namespace lumen::onnx {

namespace {

constexpr int64_t kMaxElements = int64_t{1} << 34;

int64_t checked_numel(const std::vector<int64_t>& dims, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) fail("onnx: tensor '", what, "' has a negative dim in ", shape_string(dims));
    if (d != 0 && n > kMaxElements / d) fail("onnx: tensor '", what, "' is too large: ", shape_string(dims));
    n *= d;
  }
  return n;
}

// Bytes of the external file named in `t`, checked to stay inside `folder`.
std::string read_external(const ::onnx::TensorProto& t, const std::string& folder, size_t want) {
  namespace fs = std::filesystem;
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    auto number = [&](const std::string& s) {
      try {
        size_t used = 0;
        long long v = std::stoll(s, &used);
        if (used != s.size() || v < 0) throw std::invalid_argument("");
        return static_cast<int64_t>(v);
      } catch (const std::exception&) {
        fail("onnx: tensor '", escape_bytes(t.name()), "': external data ", kv.key(), " '", escape_bytes(s),
             "' is not a non-negative integer");
      }
    };
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = number(kv.value());
    else if (kv.key() == "length") length = number(kv.value());
  }
  if (location.empty()) fail("onnx: tensor '", escape_bytes(t.name()), "' has external data without a location");
  if (folder.empty()) {
    fail("onnx: tensor '", escape_bytes(t.name()), "' has external data ('", escape_bytes(location),
         "') but the model was not read from a file (load it by path)");
  }
  fs::path base = fs::weakly_canonical(fs::path(folder));
  fs::path file = fs::weakly_canonical(base / fs::path(location));
  auto [b, f] = std::mismatch(base.begin(), base.end(), file.begin(), file.end());
  if (fs::path(location).is_absolute() || b != base.end()) {
    fail("onnx: tensor '", escape_bytes(t.name()), "': external data file '", escape_bytes(location),
         "' lies outside the model's folder ", base.string(), " (refused)");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("onnx: tensor '", escape_bytes(t.name()), "': cannot open external data file ", file.string());
  in.seekg(0, std::ios::end);
  int64_t size = static_cast<int64_t>(in.tellg());
  if (length < 0) length = static_cast<int64_t>(want);
  if (static_cast<size_t>(length) != want || offset > size || length > size - offset) {
    fail("onnx: tensor '", escape_bytes(t.name()), "': external data (offset ", offset, ", length ", length,
         ") does not match the tensor's ", want, " bytes within ", file.string(), " (", size, " bytes)");
  }
  std::string bytes(want, '\0');
  in.seekg(offset);
  in.read(bytes.data(), static_cast<std::streamsize>(want));
  if (!in) fail("onnx: tensor '", escape_bytes(t.name()), "': reading ", file.string(), " failed");
  return bytes;
}

size_t onnx_type_size(int type);

// Bytes of `n` elements as ONNX stores them (2- and 4-bit types packed).
size_t stored_bytes(int type, int64_t n) {
  if (is_narrow_type(type)) return (static_cast<size_t>(n) * static_cast<size_t>(narrow_type_bits(type)) + 7) / 8;
  return static_cast<size_t>(n) * onnx_type_size(type);
}

// Element k of narrow-typed data packed in `bytes` (low bits first), as lumen holds it.
template <typename Byte>
void unpack_narrow_data(const Byte* bytes, int type, int64_t n, Array& out) {
  int bits = narrow_type_bits(type);
  int per_byte = 8 / bits;
  for (int64_t k = 0; k < n; ++k) {
    uint32_t byte = static_cast<uint8_t>(bytes[k / per_byte]);
    int32_t v = unpack_narrow(type, byte >> ((k % per_byte) * bits));
    if (out.dtype() == DType::I8) static_cast<int8_t*>(out.data())[k] = static_cast<int8_t>(v);
    else static_cast<uint8_t*>(out.data())[k] = static_cast<uint8_t>(v);
  }
}

size_t onnx_type_size(int type) {
  switch (type) {
    case kFloat: case kInt32: case kUint32: return 4;
    case kUint8: case kInt8: case kBool: return 1;
    case kUint16: case kInt16: case kFloat16: case kBfloat16: return 2;
    case kInt64: case kDouble: case kUint64: return 8;
    default: return 0;
  }
}

// Fills `out` from the typed repeated fields (no raw_data).
void from_fields(const ::onnx::TensorProto& t, HostTensor& out, int64_t n) {
  auto count = [&](int have) {
    if (have != n) {
      fail("onnx: tensor '", escape_bytes(t.name()), "' (", onnx_type_name(out.onnx_type), ", shape ",
           shape_string(out.dims), ") holds ", have, " values, expected ", n);
    }
  };
  switch (out.onnx_type) {
    case kFloat:
      count(t.float_data_size());
      for (int64_t k = 0; k < n; ++k) static_cast<float*>(out.array.data())[k] = t.float_data(static_cast<int>(k));
      return;
    case kInt64:
      count(t.int64_data_size());
      out.int64s.assign(t.int64_data().begin(), t.int64_data().end());
      return;
    case kDouble:
      count(t.double_data_size());
      for (int64_t k = 0; k < n; ++k) static_cast<double*>(out.array.data())[k] = t.double_data(static_cast<int>(k));
      return;
    case kInt32: case kUint8: case kInt8: case kBool: case kFloat16: case kBfloat16:
      count(t.int32_data_size());
      for (int64_t k = 0; k < n; ++k) {
        int32_t v = t.int32_data(static_cast<int>(k));
        switch (out.onnx_type) {
          case kInt32: static_cast<int32_t*>(out.array.data())[k] = v; break;
          case kFloat16: case kBfloat16: static_cast<uint16_t*>(out.array.data())[k] = static_cast<uint16_t>(v); break;
          case kBool: static_cast<uint8_t*>(out.array.data())[k] = v != 0; break;
          default: static_cast<uint8_t*>(out.array.data())[k] = static_cast<uint8_t>(v); break;
        }
      }
      return;
    default:
      if (is_narrow_type(out.onnx_type)) {  // int32_data holds one code, or one packed byte of 2- / 4-bit values
        size_t want = stored_bytes(out.onnx_type, n);
        if (static_cast<size_t>(t.int32_data_size()) != want) {
          fail("onnx: tensor '", escape_bytes(t.name()), "' (", onnx_type_name(out.onnx_type), ", shape ",
               shape_string(out.dims), ") holds ", t.int32_data_size(), " packed values, expected ", want);
        }
        std::vector<uint8_t> bytes;
        for (int32_t v : t.int32_data()) bytes.push_back(static_cast<uint8_t>(v));
        unpack_narrow_data(bytes.data(), out.onnx_type, n, out.array);
        return;
      }
      fail("onnx: tensor '", escape_bytes(t.name()), "' has element type ", onnx_type_name(out.onnx_type),
           ", which lumen cannot hold");
  }
}

}  // namespace

const char* onnx_type_name(int t) {
  switch (t) {
    case kFloat: return "float";
    case kUint8: return "uint8";
    case kInt8: return "int8";
    case kUint16: return "uint16";
    case kInt16: return "int16";
    case kInt32: return "int32";
    case kInt64: return "int64";
    case kString: return "string";
    case kBool: return "bool";
    case kFloat16: return "float16";
    case kDouble: return "double";
    case kUint32: return "uint32";
    case kUint64: return "uint64";
    case 14: return "complex64";
    case 15: return "complex128";
    case kBfloat16: return "bfloat16";
    case kFloat8E4M3FN: return "float8e4m3fn";
    case kFloat8E4M3FNUZ: return "float8e4m3fnuz";
    case kFloat8E5M2: return "float8e5m2";
    case kFloat8E5M2FNUZ: return "float8e5m2fnuz";
    case kUint4: return "uint4";
    case kInt4: return "int4";
    case kFloat4E2M1: return "float4e2m1";
    case kFloat8E8M0: return "float8e8m0";
    case kUint2: return "uint2";
    case kInt2: return "int2";
    default: return "an unknown element type";
  }
}

bool onnx_type_is_float(int t) { return t == kFloat || t == kFloat16 || t == kBfloat16 || t == kDouble; }
bool onnx_type_is_integer(int t) {
  return t == kUint8 || t == kInt8 || t == kUint16 || t == kInt16 || t == kInt32 || t == kInt64 || t == kBool ||
         t == kUint32 || t == kUint64 || is_small_int_type(t);
}

DType data_dtype(int onnx_type, const std::string& what) {
  switch (onnx_type) {
    case kFloat: return DType::F32;
    case kFloat16: return DType::F16;
    case kBfloat16: return DType::BF16;
    case kInt32: return DType::I32;
    case kInt64: return DType::I64;
    case kDouble: return DType::F64;
    case kBool: return DType::Bool;
    case kInt8: return DType::I8;
    case kUint8: return DType::U8;
    case kInt4: case kInt2: return DType::I8;  // the value (storage only)
    case kUint4: case kUint2: return DType::U8;
    default:
      if (is_code_type(onnx_type)) return DType::U8;  // the bit code (storage only)
      fail("onnx: ", what, " has element type ", onnx_type_name(onnx_type), ", which lumen does not support");
  }
}

int64_t HostTensor::numel() const { return onnx_type == kInt64 ? static_cast<int64_t>(int64s.size()) : array.numel(); }

double HostTensor::real(int64_t k) const {
  return onnx_type == kInt64 ? static_cast<double>(int64s[static_cast<size_t>(k)]) : array.get(k);
}

int64_t HostTensor::integer(int64_t k) const {
  return onnx_type == kInt64 ? int64s[static_cast<size_t>(k)] : static_cast<int64_t>(array.get(k));
}

Array HostTensor::to_array() const {
  if (onnx_type != kInt64) return array;
  return Array::from_int64s(int64s, dims);
}

HostTensor decode_tensor(const ::onnx::TensorProto& t, const std::string& folder) {
  HostTensor out;
  out.name = t.name();
  out.onnx_type = t.data_type();
  out.dims.assign(t.dims().begin(), t.dims().end());
  std::string what = "tensor '" + escape_bytes(t.name()) + "'";
  int64_t n = checked_numel(out.dims, t.name());
  if (t.has_segment()) fail("onnx: ", what, " is segmented, which lumen does not read");
  DType dtype = data_dtype(out.onnx_type, what);  // refuses types lumen cannot hold
  bool external = t.data_location() == ::onnx::TensorProto::EXTERNAL;
  size_t want = stored_bytes(out.onnx_type, n);
  std::string external_bytes;
  if (external) external_bytes = read_external(t, folder, want);
  const std::string& raw = external ? external_bytes : t.raw_data();
  bool fields = !external && !t.has_raw_data();
  // Sizes are checked against the data present before anything is allocated.
  if (!fields && raw.size() != want) {
    fail("onnx: ", what, " (", onnx_type_name(out.onnx_type), ", shape ", shape_string(out.dims), ") has ",
         raw.size(), " bytes of data, expected ", want);
  }
  if (fields) {
    int64_t have = std::max({t.float_data_size(), t.int32_data_size(), t.int64_data_size(), t.double_data_size(),
                             t.uint64_data_size()});
    int64_t expected = is_narrow_type(out.onnx_type) ? static_cast<int64_t>(want) : n;  // packed bytes
    if (have != expected) {
      fail("onnx: ", what, " (", onnx_type_name(out.onnx_type), ", shape ", shape_string(out.dims), ") holds ", have,
           " values, expected ", expected);
    }
  }
  if (out.onnx_type != kInt64) out.array = Array(dtype, out.dims);
  if (fields) {
    from_fields(t, out, n);
    return out;
  }
  if (out.onnx_type == kInt64) {
    out.int64s.resize(static_cast<size_t>(n));
    if (want > 0) std::memcpy(out.int64s.data(), raw.data(), want);
  } else if (is_narrow_type(out.onnx_type)) {
    unpack_narrow_data(raw.data(), out.onnx_type, n, out.array);
  } else if (out.onnx_type == kBool) {
    auto* p = static_cast<uint8_t*>(out.array.data());
    for (size_t k = 0; k < want; ++k) p[k] = raw[k] != 0;
  } else if (want > 0) {
    std::memcpy(out.array.data(), raw.data(), want);
  }
  return out;
}

}  // namespace lumen::onnx

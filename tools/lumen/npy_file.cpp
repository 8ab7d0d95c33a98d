#include "tools/lumen/npy_file.h"

#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "lumen/core/error.h"

namespace lumen::tools {

namespace {

// The value of 'key' in the header's Python dict literal, as written.
std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) fail("npy: ", path, ": header has no '", key, "'");
  size_t colon = header.find(':', at);
  if (colon == std::string::npos) fail("npy: ", path, ": malformed header");
  size_t begin = header.find_first_not_of(' ', colon + 1);
  if (begin == std::string::npos) fail("npy: ", path, ": malformed header");
  char open = header[begin];
  size_t end = open == '(' ? header.find(')', begin) : open == '\'' ? header.find('\'', begin + 1) : header.find(',', begin);
  if (end == std::string::npos) fail("npy: ", path, ": malformed header");
  return header.substr(begin, end - begin + 1);
}

std::vector<int64_t> parse_shape(const std::string& text, const std::string& path) {
  std::vector<int64_t> shape;
  std::string inner = text.substr(1, text.size() - 2);
  std::stringstream in(inner);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t b = item.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    try {
      size_t used = 0;
      long long v = std::stoll(item.substr(b), &used);
      if (v < 0) throw std::invalid_argument("");
      shape.push_back(v);
    } catch (const std::exception&) {
      fail("npy: ", path, ": bad shape ", escape_bytes(text));
    }
  }
  return shape;
}

}  // namespace

Array read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("npy: cannot open ", path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) fail("npy: ", path, " is not a .npy file");
  int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail("npy: ", path, " is truncated");
    for (int k = 0; k < 4; ++k) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + k])) << (8 * k);
    start = 12;
  } else {
    fail("npy: ", path, ": unsupported format version ", major);
  }
  if (header_len > bytes.size() - start) fail("npy: ", path, " is truncated (header)");
  std::string header = bytes.substr(start, header_len);
  std::string descr = dict_value(header, "descr", path);
  if (dict_value(header, "fortran_order", path).find("True") != std::string::npos) {
    fail("npy: ", path, ": Fortran-order arrays are not supported (save with np.ascontiguousarray)");
  }
  std::vector<int64_t> shape = parse_shape(dict_value(header, "shape", path), path);
  struct Kind { const char* descr; DType dtype; size_t size; };
  static const Kind kinds[] = {{"'<f4'", DType::F32, 4}, {"'<f2'", DType::F16, 2}, {"'<i4'", DType::I32, 4},
                               {"'|b1'", DType::Bool, 1}, {"'|i1'", DType::I8, 1}, {"'|u1'", DType::U8, 1},
                               {"'<i8'", DType::I32, 8}};
  const Kind* kind = nullptr;
  for (const Kind& k : kinds) {
    if (descr == k.descr) kind = &k;
  }
  if (!kind) fail("npy: ", path, ": dtype ", escape_bytes(descr), " is not supported (float32, float16, int32, int64, bool, int8, uint8)");
  Array out(kind->dtype, shape);
  size_t data = start + header_len;
  size_t want = static_cast<size_t>(out.numel()) * kind->size;
  if (bytes.size() - data != want) {
    fail("npy: ", path, ": holds ", bytes.size() - data, " data bytes, the shape ", shape_string(shape), " needs ", want);
  }
  if (kind->size == 8) {  // int64 -> i32, range-checked
    for (int64_t k = 0; k < out.numel(); ++k) {
      int64_t v = 0;
      std::memcpy(&v, bytes.data() + data + static_cast<size_t>(k) * 8, 8);
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
        fail("npy: ", path, ": int64 value ", v, " does not fit in int32 (lumen's integer dtype)");
      }
      static_cast<int32_t*>(out.data())[k] = static_cast<int32_t>(v);
    }
  } else if (want > 0) {
    std::memcpy(out.data(), bytes.data() + data, want);
  }
  return out;
}

}  // namespace lumen::tools

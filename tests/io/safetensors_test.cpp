// safetensors: round trips of every dtype, one test per malformed-file error,
// and a fuzzer over mutated files.
#include <gtest/gtest.h>

#include <cstring>

#include "lumen/core/error.h"
#include "lumen/io/safetensors.h"
#include "tests/io/fuzz_util.h"

namespace lumen::io {
namespace {

using lumen::testing::temp_path;

std::vector<std::pair<std::string, Array>> sample_tensors() {
  Array f = Array::from_floats({1.5f, -2, 3, 4, 5, 6}, {2, 3});
  Array h(DType::F16, {3});
  Array b(DType::BF16, {2, 1});
  Array i = Array::from_ints({7, -8, 9}, {3});
  Array q(DType::I8, {4});
  Array u(DType::U8, {1, 2});
  for (int k = 0; k < 3; ++k) h.set(k, 0.25 * k);
  b.set(0, -1.0);
  b.set(1, 3.0);
  for (int k = 0; k < 4; ++k) q.set(k, -100 + 60 * k);
  u.set(0, 200);
  u.set(1, 1);
  Array l = Array::from_int64s({int64_t{1} << 62, -3000000000LL, (int64_t{1} << 53) + 1}, {3});
  Array d = Array::from_doubles({0.1, -1e300}, {2});
  return {{"w.f32", f}, {"w.f16", h},  {"w.bf16", b}, {"ids", i}, {"q", q}, {"bytes", u}, {"empty", Array(DType::F32, {0, 4})},
          {"long", l},  {"double", d}};
}

void expect_same(const Array& a, const Array& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t k = 0; k < a.numel(); ++k) {
    EXPECT_EQ(a.load(k).i, b.load(k).i) << k;  // int64 exactly
    EXPECT_EQ(a.get(k), b.get(k)) << k;
  }
}

TEST(Safetensors, RoundTripsEveryDtypeAndMetadata) {
  std::string path = temp_path("round.safetensors");
  auto tensors = sample_tensors();
  save_safetensors(path, tensors, {{"format", "pt"}});
  SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.entries().size(), tensors.size());
  for (const auto& [name, a] : tensors) expect_same(f.get(name), a);
  // Borrowed, not copied: the array stays valid after the file object is gone.
  Array kept = SafetensorsFile::open(path).get("w.f32");
  EXPECT_FLOAT_EQ(kept.to_floats()[0], 1.5f);
}

// Writes a file with a hand-made header (and `data` bytes after it).
std::string with_header(const std::string& name, const std::string& json, size_t data = 64, int64_t length = -1) {
  std::string path = temp_path(name);
  std::vector<unsigned char> bytes(8);
  uint64_t n = length >= 0 ? static_cast<uint64_t>(length) : json.size();
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<unsigned char>(n >> (8 * i));
  bytes.insert(bytes.end(), json.begin(), json.end());
  bytes.resize(bytes.size() + data, 0);
  lumen::testing::write_bytes(path, bytes);
  return path;
}

void expect_error(const std::string& path, const std::string& fragment) {
  try {
    SafetensorsFile f = SafetensorsFile::open(path);
    for (const auto& e : f.entries()) f.get(e.name);
    FAIL() << "no error for " << path << " (expected '" << fragment << "')";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Safetensors, MalformedFilesGiveClearErrors) {
  expect_error(temp_path("missing.safetensors"), "cannot open");
  {
    std::string p = temp_path("tiny.safetensors");
    lumen::testing::write_bytes(p, {1, 2, 3});
    expect_error(p, "8-byte header length");
  }
  expect_error(with_header("huge_len", "{}", 0, int64_t{1} << 40), "limit");
  expect_error(with_header("long_len", "{}", 0, 1000), "truncated");
  expect_error(with_header("not_json", "{\"a\": [", 0), "not valid JSON");
  expect_error(with_header("not_object", "[1, 2]", 0), "JSON object");
  expect_error(with_header("no_dtype", R"({"t": {"shape": [1], "data_offsets": [0, 4]}})"), "dtype");
  expect_error(with_header("bad_dtype", R"({"t": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}})"), "not supported");
  expect_error(with_header("neg_shape", R"({"t": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})"), "non-negative");
  expect_error(with_header("absurd", R"({"t": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})"),
               "absurdly large");
  expect_error(with_header("outside", R"({"t": {"dtype": "F32", "shape": [100], "data_offsets": [0, 400]}})"), "outside");
  expect_error(with_header("span", R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})"), "needs 12");
  expect_error(with_header("reversed", R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})"), "outside");
  expect_error(with_header("meta", R"({"__metadata__": {"a": 1}})"), "not a string");
  SafetensorsFile ok =
      SafetensorsFile::open(with_header("ok", R"({"weight": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 8));
  try {
    ok.get("model.weight2");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tensor named 'model.weight2'"), std::string::npos) << e.what();
  }
}

std::string tensor_json(const std::string& name, int begin, int end) {
  return "\"" + name + "\": {\"dtype\": \"U8\", \"shape\": [" + std::to_string(end - begin) + "], \"data_offsets\": [" +
         std::to_string(begin) + ", " + std::to_string(end) + "]}";
}

// As the reference reader: sorted by offset, tensors tile the data section
// exactly. (Tensor order in the header is free; empty tensors fit anywhere.)
TEST(Safetensors, TensorsMustTileTheDataSection) {
  auto header = [](std::vector<std::string> parts) {
    std::string j = "{";
    for (size_t i = 0; i < parts.size(); ++i) j += (i ? ", " : "") + parts[i];
    return j + "}";
  };
  SafetensorsFile shuffled = SafetensorsFile::open(
      with_header("tiled", header({tensor_json("b", 4, 8), tensor_json("e", 4, 4), tensor_json("a", 0, 4)}), 8));
  EXPECT_EQ(shuffled.entries().size(), 3u);
  expect_error(with_header("gap", header({tensor_json("a", 0, 4), tensor_json("b", 6, 8)}), 8),
               "tensor 'b' starts at byte 6 of the data section but 'a' ends at 4 (a gap)");
  expect_error(with_header("overlap", header({tensor_json("a", 0, 4), tensor_json("b", 2, 6)}), 6),
               "tensor 'b' starts at byte 2 of the data section but 'a' ends at 4 (overlapping tensors)");
  expect_error(with_header("same", header({tensor_json("a", 0, 4), tensor_json("b", 0, 4)}), 4), "overlapping tensors");
  expect_error(with_header("late", header({tensor_json("a", 2, 4)}), 4), "but the section starts at 0 (a gap)");
  expect_error(with_header("trailing", header({tensor_json("a", 0, 4)}), 5), "the tensors cover 4 bytes but the data section has 5");
  expect_error(with_header("empty_trailing", "{}", 1), "the tensors cover 0 bytes");
}

TEST(Safetensors, DuplicateKeysAreRejected) {
  expect_error(with_header("dup", "{" + tensor_json("a", 0, 4) + ", " + tensor_json("a", 4, 8) + "}", 8),
               "repeats the key 'a'");
  expect_error(with_header("dup_field", R"({"a": {"dtype": "U8", "dtype": "U8", "shape": [0], "data_offsets": [0, 0]}})", 0),
               "repeats the key 'dtype'");
}

// A NUL in a name used to cut it where C strings end, so "a\0x" replaced "a".
TEST(Safetensors, NamesWithNulAreRejected) {
  expect_error(with_header("nul", "{" + tensor_json("a\\u0000x", 0, 4) + "}", 4), "no NUL byte");
  expect_error(with_header("empty_name", "{" + tensor_json("", 0, 4) + "}", 4), "non-empty");
}

TEST(Safetensors, DeepNestingIsBounded) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  expect_error(with_header("deep", R"({"a": {"dtype": "U8", "shape": )" + deep + R"(, "data_offsets": [0, 0]}})", 0),
               "nests deeper than 64 levels");
  std::string ok_depth = std::string(60, '[') + std::string(60, ']');
  expect_error(with_header("deepish", R"({"a": {"dtype": "U8", "shape": )" + ok_depth + R"(, "data_offsets": [0, 0]}})", 0),
               "shape entries must be non-negative integers");
}

// Bytes of the file in a message are escaped: the message stays valid UTF-8
// (Python would raise UnicodeDecodeError instead of lumen.Error otherwise).
TEST(Safetensors, MessagesEscapeFileBytes) {
  auto check = [](const std::string& path, const std::string& fragment) {
    try {
      SafetensorsFile::open(path);
      FAIL() << "no error";
    } catch (const Error& e) {
      std::string m = e.what();
      EXPECT_EQ(valid_utf8(m), m);
      EXPECT_EQ(m.find('\x01'), std::string::npos) << m;
      EXPECT_NE(m.find(fragment), std::string::npos) << m;
    }
  };
  // Invalid UTF-8 in a string: the JSON parser's message quotes the bytes.
  check(with_header("bad_utf8", "{\"a\xff\xfe\": 1}", 0), "not valid JSON");
  check(with_header("bad_dtype_bytes", R"({"t": {"dtype": "\u0001X", "shape": [1], "data_offsets": [0, 4]}})", 4),
        "dtype '\\x01X' is not supported");
}

TEST(Safetensors, I64AndF64AreReadAsThemselves) {
  std::string path = temp_path("i64.safetensors");
  std::string json = R"({"t": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]},)"
                     R"( "d": {"dtype": "F64", "shape": [1], "data_offsets": [16, 24]}})";
  std::vector<unsigned char> bytes(8);
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<unsigned char>(json.size() >> (8 * i));
  bytes.insert(bytes.end(), json.begin(), json.end());
  int64_t values[2] = {5, (int64_t{1} << 62) + 1};  // past 2^53: exact only if never a double
  double d = 0.1;
  bytes.resize(bytes.size() + 24);
  std::memcpy(bytes.data() + 8 + json.size(), values, 16);
  std::memcpy(bytes.data() + 8 + json.size() + 16, &d, 8);
  lumen::testing::write_bytes(path, bytes);
  SafetensorsFile f = SafetensorsFile::open(path);
  Array t = f.get("t"), dd = f.get("d");
  ASSERT_EQ(t.dtype(), DType::I64);
  EXPECT_EQ(t.load(0).i, 5);
  EXPECT_EQ(t.load(1).i, (int64_t{1} << 62) + 1);
  ASSERT_EQ(dd.dtype(), DType::F64);
  EXPECT_EQ(dd.get(0), 0.1);  // not rounded through f32
}

TEST(Safetensors, FuzzedFilesLoadOrRaise) {
  std::string valid = temp_path("valid.safetensors");
  save_safetensors(valid, sample_tensors(), {{"k", "v"}});
  std::vector<unsigned char> bytes = lumen::testing::read_bytes(valid);
  size_t hot = 8 + static_cast<size_t>(bytes[0] | (bytes[1] << 8));
  std::mt19937_64 rng(1234);
  std::string path = temp_path("fuzz.safetensors");
  int loaded = 0, rejected = 0;
  for (int c = 0, n = lumen::testing::fuzz_cases(3000, 100000); c < n; ++c) {
    lumen::testing::write_bytes(path, lumen::testing::mutate(bytes, hot, rng));
    try {
      SafetensorsFile f = SafetensorsFile::open(path);
      for (const auto& e : f.entries()) {
        Array a = f.get(e.name);
        double sum = 0;
        for (int64_t k = 0; k < a.numel(); ++k) sum += a.get(k);  // touch every byte it claims
        (void)sum;
      }
      ++loaded;
    } catch (const Error&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(loaded, 0);
}

}  // namespace
}  // namespace lumen::io

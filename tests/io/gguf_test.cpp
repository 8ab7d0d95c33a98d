// GGUF: a hand-written file read back (metadata, shapes in PyTorch order,
// quantized tensors), one test per malformed-file error, and a fuzzer.
#include <gtest/gtest.h>

#include <cstring>

#include "lumen/core/error.h"
#include "lumen/io/gguf.h"
#include "tests/io/fuzz_util.h"

namespace lumen::io {
namespace {

using lumen::testing::temp_path;

// A little GGUF writer for tests.
class Writer {
 public:
  template <typename T>
  void put(T v) {
    auto* p = reinterpret_cast<const unsigned char*>(&v);
    head_.insert(head_.end(), p, p + sizeof(T));
  }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    head_.insert(head_.end(), s.begin(), s.end());
  }
  void kv_u32(const std::string& k, uint32_t v) { str(k), put<uint32_t>(4), put(v), ++kvs_; }
  void kv_f32(const std::string& k, float v) { str(k), put<uint32_t>(6), put(v), ++kvs_; }
  void kv_str(const std::string& k, const std::string& v) { str(k), put<uint32_t>(8), str(v), ++kvs_; }
  void kv_u8(const std::string& k, uint8_t v) { str(k), put<uint32_t>(0), put(v), ++kvs_; }
  void kv_bool(const std::string& k, bool v) { str(k), put<uint32_t>(7), put<uint8_t>(v), ++kvs_; }
  // An array of u8 that claims `count` elements but holds `held`.
  void kv_u8_array(const std::string& k, uint64_t count, uint64_t held) {
    str(k), put<uint32_t>(9), put<uint32_t>(0), put<uint64_t>(count);
    head_.insert(head_.end(), held, 1);
    ++kvs_;
  }
  void kv_strings(const std::string& k, const std::vector<std::string>& v) {
    str(k), put<uint32_t>(9), put<uint32_t>(8), put<uint64_t>(v.size());
    for (const auto& s : v) str(s);
    ++kvs_;
  }
  // dims in GGUF order (fastest first); data already in the type's layout.
  void tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, std::vector<unsigned char> data) {
    tensors_.push_back({name, ne, type, std::move(data)});
  }
  std::vector<unsigned char> bytes() const {
    std::vector<unsigned char> out;
    auto put32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i))); };
    auto put64 = [&](uint64_t v) { for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i))); };
    out.insert(out.end(), {'G', 'G', 'U', 'F'});
    put32(3);
    put64(tensors_.size());
    put64(kvs_);
    out.insert(out.end(), head_.begin(), head_.end());
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
      put64(t.name.size());
      out.insert(out.end(), t.name.begin(), t.name.end());
      put32(static_cast<uint32_t>(t.ne.size()));
      for (uint64_t n : t.ne) put64(n);
      put32(t.type);
      put64(offset);
      offset += (t.data.size() + 31) / 32 * 32;
    }
    while (out.size() % 32) out.push_back(0);
    for (const auto& t : tensors_) {
      out.insert(out.end(), t.data.begin(), t.data.end());
      while (out.size() % 32) out.push_back(0);
    }
    return out;
  }

 private:
  struct T {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    std::vector<unsigned char> data;
  };
  std::vector<unsigned char> head_;
  uint64_t kvs_ = 0;
  std::vector<T> tensors_;
};

std::vector<unsigned char> floats(const std::vector<float>& v) {
  std::vector<unsigned char> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

Writer sample() {
  Writer w;
  w.kv_str("general.architecture", "llama");
  w.kv_u32("llama.block_count", 2);
  w.kv_f32("llama.rope.freq_base", 10000.0f);
  w.kv_strings("tokenizer.ggml.tokens", {"<s>", "a", "b"});
  w.tensor("w", {3, 2}, 0, floats({1, 2, 3, 4, 5, 6}));  // torch shape [2, 3]
  std::vector<unsigned char> q8(34, 0);                  // one Q8_0 block: scale 1.0, values 0..31
  uint16_t one = 0x3c00;
  std::memcpy(q8.data(), &one, 2);
  for (int i = 0; i < 32; ++i) q8[static_cast<size_t>(2 + i)] = static_cast<unsigned char>(i);
  w.tensor("q", {32}, 8, q8);
  return w;
}

std::string write(const std::string& name, const std::vector<unsigned char>& bytes) {
  std::string p = temp_path(name);
  lumen::testing::write_bytes(p, bytes);
  return p;
}

TEST(Gguf, ReadsMetadataTensorsAndShapes) {
  GgufFile f = GgufFile::open(write("ok.gguf", sample().bytes()));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.at("general.architecture").as_string("a"), "llama");
  EXPECT_EQ(f.at("llama.block_count").as_int("b"), 2);
  EXPECT_FLOAT_EQ(static_cast<float>(f.at("llama.rope.freq_base").as_double("r")), 10000.0f);
  EXPECT_EQ(f.at("tokenizer.ggml.tokens").array.size(), 3u);
  EXPECT_EQ(f.at("tokenizer.ggml.tokens").array[2].as_string("t"), "b");
  Array w = f.get("w");
  EXPECT_EQ(w.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w.to_floats(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  const GgufTensor& q = f.tensor("q");
  EXPECT_EQ(q.bytes, 34u);
  EXPECT_EQ(f.data(q)[2 + 31], 31);
  EXPECT_THROW(f.get("q"), Error);        // quantized: not a plain array
  EXPECT_THROW(f.tensor("missing"), Error);
  EXPECT_THROW(f.at("llama.block_count").as_string("b"), Error);
}

TEST(Gguf, ReadsI64AndF64TensorsAsThemselves) {
  Writer w = sample();
  std::vector<int64_t> longs{(int64_t{1} << 62) + 1, -3000000000LL};  // past 2^53 and past i32
  std::vector<double> doubles{0.1, -1e300};
  std::vector<unsigned char> lb(16), db(16);
  std::memcpy(lb.data(), longs.data(), 16);
  std::memcpy(db.data(), doubles.data(), 16);
  w.tensor("l", {2}, 27, lb);
  w.tensor("d", {2}, 28, db);
  GgufFile f = GgufFile::open(write("wide.gguf", w.bytes()));
  Array l = f.get("l"), d = f.get("d");
  ASSERT_EQ(l.dtype(), DType::I64);
  EXPECT_EQ(l.load(0).i, (int64_t{1} << 62) + 1);
  EXPECT_EQ(l.load(1).i, -3000000000LL);
  ASSERT_EQ(d.dtype(), DType::F64);
  EXPECT_EQ(d.get(0), 0.1);
  EXPECT_EQ(d.get(1), -1e300);
}

void expect_error(const std::vector<unsigned char>& bytes, const std::string& fragment) {
  try {
    GgufFile::open(write("bad.gguf", bytes));
    FAIL() << "no error (expected '" << fragment << "')";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Gguf, MalformedFilesGiveClearErrors) {
  std::vector<unsigned char> good = sample().bytes();
  expect_error({'G', 'G'}, "truncated");
  auto bad_magic = good;
  bad_magic[0] = 'X';
  expect_error(bad_magic, "not a GGUF file");
  auto bad_version = good;
  bad_version[4] = 9;
  expect_error(bad_version, "version 9");
  auto many = good;
  many[8 + 7] = 0x7f;  // tensor count ~ 2^62
  expect_error(many, "claims");
  expect_error(std::vector<unsigned char>(good.begin(), good.begin() + static_cast<long>(good.size()) - 40), "outside");
  expect_error(std::vector<unsigned char>(good.begin(), good.begin() + 60), "truncated");
  Writer bogus;
  bogus.tensor("x", {32}, 99, {});
  expect_error(bogus.bytes(),
               "tensor 'x' has unknown type 99; lumen reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, "
               "Q6_K, F64 and I64");
  Writer odd;
  odd.tensor("x", {33}, 8, std::vector<unsigned char>(68));
  expect_error(odd.bytes(), "not a multiple");
  Writer big;
  big.tensor("x", {1ull << 41}, 0, {});
  expect_error(big.bytes(), "absurd");
  Writer longstr;
  longstr.str("k");
  longstr.put<uint32_t>(8);
  longstr.put<uint64_t>(1ull << 40);
  auto b = longstr.bytes();
  b[16] = 1;  // one metadata entry
  expect_error(b, "claims");
}

// A known type lumen cannot load (Q2_K) is indexed, so the metadata stays
// readable; loading its values names the tensor, the type and what lumen reads.
TEST(Gguf, KnownUnreadableTypeIsIndexedAndNamedWhenLoaded) {
  Writer w = sample();
  w.tensor("blk.0.ffn_down.weight", {256, 2}, 10, std::vector<unsigned char>(2 * 84));  // Q2_K
  GgufFile f = GgufFile::open(write("q2k.gguf", w.bytes()));
  const GgufTensor& t = f.tensor("blk.0.ffn_down.weight");
  EXPECT_EQ(t.bytes, 168u);
  EXPECT_EQ(f.readable_format(f.tensor("q")).name, std::string("Q8_0"));
  try {
    f.readable_format(t);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'blk.0.ffn_down.weight' has type Q2_K (10); lumen reads F32, F16, BF16, "
                                         "Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, F64 and I64"),
              std::string::npos)
        << e.what();
  }
}

// Truncating a file with quantized tensors names the tensor and its type.
TEST(Gguf, TruncatedQuantizedTensorNamesTensorAndType) {
  Writer w;
  w.tensor("blk.3.attn_q.weight", {64, 2}, 3, std::vector<unsigned char>(4 * 20, 7));  // Q4_1
  std::vector<unsigned char> b = w.bytes();
  ASSERT_GT(b.size(), 40u);
  b.erase(b.end() - 40, b.end());
  expect_error(b, "tensor 'blk.3.attn_q.weight' (Q4_1 (3), 80 bytes at offset 0) lies outside");
}

// numel * type size is overflow-checked: 2^62 F32 elements once wrapped to 0 bytes.
TEST(Gguf, HugeTensorsFailTheBoundsCheck) {
  for (uint32_t type : {0u, 1u, 30u, 8u}) {
    Writer w;
    w.tensor("huge", {1ull << 31, 1ull << 31}, type, {});
    try {
      GgufFile::open(write("huge.gguf", w.bytes()));
      FAIL() << "type " << type << " loaded";
    } catch (const Error& e) {
      std::string m = e.what();
      EXPECT_TRUE(m.find("absurdly large") != std::string::npos || m.find("lies outside") != std::string::npos) << m;
    }
  }
  Writer w;
  w.tensor("huge", {1ull << 40, 1ull << 22}, 0, {});  // 2^62 elements, 2^64 bytes
  expect_error(w.bytes(), "tensor 'huge' of 4611686018427387904 F32 elements is absurdly large");
}

// A value of another type than the key's use needs is an Error naming the key
// and both types (it was std::bad_variant_access for bools).
TEST(Gguf, WrongValueTypesNameKeyAndTypes) {
  Writer w;
  w.kv_u8("tokenizer.ggml.add_bos_token", 1);
  w.kv_str("tokenizer.ggml.add_eos_token", "true");
  w.kv_bool("flag", true);
  w.kv_strings("list", {"a"});
  GgufFile f = GgufFile::open(write("types.gguf", w.bytes()));
  EXPECT_TRUE(f.at("flag").as_bool("flag"));
  auto expect = [](auto&& call, const std::string& fragment) {
    try {
      call();
      FAIL() << "no error (expected '" << fragment << "')";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect([&] { f.at("tokenizer.ggml.add_bos_token").as_bool("tokenizer.ggml.add_bos_token"); },
         "metadata 'tokenizer.ggml.add_bos_token' is u8, expected bool");
  expect([&] { f.at("tokenizer.ggml.add_eos_token").as_bool("tokenizer.ggml.add_eos_token"); },
         "metadata 'tokenizer.ggml.add_eos_token' is string, expected bool");
  expect([&] { f.at("flag").as_int("flag"); }, "metadata 'flag' is bool, expected an integer");
  expect([&] { f.at("list").as_string("list"); }, "metadata 'list' is array of string, expected a string");
  expect([&] { f.at("tokenizer.ggml.add_eos_token").as_double("x"); }, "metadata 'x' is string, expected a number");
}

// Array lengths are bounded by the bytes left before anything is allocated,
// and all arrays together by the file size.
TEST(Gguf, ArrayLengthsAreBoundedByTheFile) {
  Writer lie;
  lie.kv_u8_array("tokenizer.ggml.token_type", 1ull << 31, 16);
  expect_error(lie.bytes(), "metadata 'tokenizer.ggml.token_type' claims 2147483648 array elements of u8 but only");
  Writer many;  // a 200 KB file whose u8 arrays hold 190k elements: ~14 MB as GgufValues, over the budget
  many.kv_u8_array("a", 95000, 95000);
  many.kv_u8_array("b", 95000, 95000);
  expect_error(many.bytes(), "metadata 'b' claims 95000 more array elements than a file of this size");
  Writer fits;
  fits.kv_u8_array("a", 40000, 40000);
  EXPECT_EQ(GgufFile::open(write("fits.gguf", fits.bytes())).at("a").array.size(), 40000u);
  Writer twice;
  twice.kv_u32("k", 1);
  twice.kv_u32("k", 2);
  expect_error(twice.bytes(), "metadata 'k' appears twice");
}

TEST(Gguf, MessagesEscapeFileBytes) {
  Writer w;
  w.tensor(std::string("bad\xff\x01name"), {3}, 99, {});
  try {
    GgufFile::open(write("bytes.gguf", w.bytes()));
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(valid_utf8(m), m);
    EXPECT_NE(m.find("tensor 'bad\\xff\\x01name' has unknown type 99"), std::string::npos) << m;
  }
}

TEST(Gguf, FuzzedFilesLoadOrRaise) {
  std::vector<unsigned char> good = sample().bytes();
  std::mt19937_64 rng(99);
  std::string path = temp_path("fuzz.gguf");
  int loaded = 0, rejected = 0;
  for (int c = 0, n = lumen::testing::fuzz_cases(3000, 100000); c < n; ++c) {
    lumen::testing::write_bytes(path, lumen::testing::mutate(good, 200, rng));
    try {
      GgufFile f = GgufFile::open(path);
      for (const GgufTensor& t : f.tensors()) {
        const unsigned char* p = f.data(t);
        unsigned sum = 0;
        for (uint64_t i = 0; i < t.bytes; ++i) sum += p[i];  // touch every byte it claims
        (void)sum;
      }
      ++loaded;
    } catch (const Error&) {
      ++rejected;
    }
  }
  EXPECT_GT(loaded, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace lumen::io

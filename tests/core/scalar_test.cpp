// Tests for lumen/core/scalar.h and the I64/F64 dtypes of lumen/core/dtype.h
// and Array: exact int64 element access, conversions as stores do them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "lumen/core/array.h"
#include "lumen/core/error.h"
#include "lumen/core/scalar.h"

namespace lumen {
namespace {

constexpr int64_t kPast53 = (int64_t{1} << 62) + 1;  // no double holds it

TEST(DType64, NamesSizesAndKinds) {
  EXPECT_EQ(dtype_size(DType::I64), 8u);
  EXPECT_EQ(dtype_size(DType::F64), 8u);
  EXPECT_EQ(dtype_from_name("i64"), DType::I64);
  EXPECT_EQ(dtype_from_name("f64"), DType::F64);
  EXPECT_TRUE(is_float(DType::F64));
  EXPECT_FALSE(is_float(DType::I64));
  EXPECT_TRUE(is_wide(DType::I64) && is_wide(DType::F64) && !is_wide(DType::F32));
  // Appended: the older dtypes keep their numbers (tuning-cache keys, dumps).
  EXPECT_EQ(static_cast<int>(DType::U8), 6);
  EXPECT_EQ(static_cast<int>(DType::I64), 7);
  EXPECT_EQ(static_cast<int>(DType::F64), 8);
  EXPECT_EQ(all_dtypes().size(), 9u);
}

TEST(Scalar, ConvertToWrapsIntegersAndSaturatesFloats) {
  EXPECT_EQ(convert_to(DType::I64, Scalar::of_int(kPast53)).i, kPast53);
  EXPECT_EQ(convert_to(DType::I32, Scalar::of_int((int64_t{1} << 32) + 5)).i, 5);  // wraps, as a C or torch cast
  EXPECT_EQ(convert_to(DType::I32, Scalar::of_float(1e10)).i, INT32_MAX);          // floats saturate
  EXPECT_EQ(convert_to(DType::I64, Scalar::of_float(1e300)).i, INT64_MAX);
  EXPECT_EQ(convert_to(DType::I64, Scalar::of_float(-1e300)).i, INT64_MIN);
  EXPECT_EQ(convert_to(DType::I64, Scalar::of_float(NAN)).i, 0);
  EXPECT_EQ(convert_to(DType::I64, Scalar::of_float(-2.9)).i, -2);
  EXPECT_EQ(convert_to(DType::I8, Scalar::of_int(kPast53)).i, 127);
  EXPECT_EQ(convert_to(DType::Bool, Scalar::of_int(int64_t{1} << 40)).i, 1);
  EXPECT_EQ(convert_to(DType::F64, Scalar::of_float(0.1)).f, 0.1);
  EXPECT_EQ(convert_to(DType::F32, Scalar::of_float(0.1)).f, static_cast<double>(0.1f));
  EXPECT_TRUE(convert_to(DType::F64, Scalar::of_int(3)).integral == false);
}

TEST(Array64, LoadAndStoreAreExact) {
  Array a = Array::from_int64s({kPast53, -kPast53, 3000000000LL}, {3});
  EXPECT_EQ(a.load(0).i, kPast53);
  EXPECT_EQ(a.load(1).i, -kPast53);
  EXPECT_EQ(a.get(2), 3e9);
  Array b(DType::I64, {1});
  b.store(0, Scalar::of_int(kPast53));
  EXPECT_EQ(static_cast<const int64_t*>(b.data())[0], kPast53);
  Array d = Array::from_doubles({0.1, -1e300}, {2});
  EXPECT_EQ(d.get(0), 0.1);
  EXPECT_EQ(d.load(1).f, -1e300);
  EXPECT_EQ(d.nbytes(), 16u);
  std::ostringstream text;
  text << a;
  EXPECT_EQ(text.str(), "[4611686018427387905, -4611686018427387905, 3000000000]");
  EXPECT_THROW(Array::from_int64s({1, 2}, {3}), Error);
}

}  // namespace
}  // namespace lumen

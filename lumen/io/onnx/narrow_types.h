// ONNX element types narrower than a byte or not IEEE: float8 (e4m3fn,
// e4m3fnuz, e5m2, e5m2fnuz, e8m0), float4 (e2m1) and 2- / 4-bit integers.
//
// lumen holds a float8 / float4 value as its bit code in a u8 (a *code
// type*: never arithmetic on the codes), and a 2- / 4-bit integer as its
// value in an i8 / u8. Both kinds are storage only: the importer lets them
// through casts and movement ops (narrow_type_op_allowed) and refuses any
// other op with an error naming the node and the element type. A Cast from a
// code type decodes through a table of every code's value (a Gather).
#pragma once

#include <cstdint>
#include <string>

#include "lumen/core/tensor.h"

namespace lumen::onnx {

// TensorProto::DataType values of the narrow types.
enum NarrowType : int {
  kFloat8E4M3FN = 17, kFloat8E4M3FNUZ = 18, kFloat8E5M2 = 19, kFloat8E5M2FNUZ = 20, kUint4 = 21, kInt4 = 22,
  kFloat4E2M1 = 23, kFloat8E8M0 = 24, kUint2 = 25, kInt2 = 26
};

bool is_code_type(int onnx_type);       // float8 / float4: held as bit codes
bool is_small_int_type(int onnx_type);  // 2- / 4-bit integers: held as values
inline bool is_narrow_type(int onnx_type) { return is_code_type(onnx_type) || is_small_int_type(onnx_type); }
int narrow_type_bits(int onnx_type);    // 8, 4 or 2
// Bits of one packed element (`code`, already shifted down) as lumen holds
// it: the code itself, or the integer sign-extended.
int32_t unpack_narrow(int onnx_type, uint32_t code);
// The value of a float8 / float4 code (NaN, +-inf and -0 as the format defines).
double decode_code(int onnx_type, uint32_t code);
// Whether an op may take narrow-typed inputs: casts and pure movement.
bool narrow_type_op_allowed(const std::string& op_type);
// The decoding table of a code type: 2^bits values, in code order.
std::vector<double> code_table(int onnx_type);

class NodeContext;
// Input `i` of a node as f32 values: float8 / float4 codes decoded through
// their table (a Gather), anything else cast.
Tensor values_f32(NodeContext& n, size_t i);

}  // namespace lumen::onnx

// The op table: ONNX op type -> builder. Each family registers its ops from
// its own file (ops_<family>.cpp).
#pragma once

#include <string>
#include <unordered_map>

#include "lumen/io/onnx/node_context.h"

namespace lumen::onnx {

// Ops of the default domain are keyed by their op type, others by
// "domain:op_type" (op_key).
using OpTable = std::unordered_map<std::string, Builder>;

// The one other domain lumen reads (optimizer ops).
constexpr const char* kTrainingDomain = "ai.onnx.preview.training";
std::string op_key(const std::string& domain, const std::string& op_type);

const OpTable& op_table();

void add_control_ops(OpTable& table);      // Constant, Identity, If, Loop, Cast, ...
void add_elementwise_ops(OpTable& table);  // Add, Mul, comparisons, logic, Where, Clip, ...
void add_unary_ops(OpTable& table);        // Exp, Relu, Sigmoid, Gelu, ...
void add_movement_ops(OpTable& table);     // Reshape, Transpose, Slice, Concat, Gather, Pad, ...
void add_shape_ops(OpTable& table);        // Shape, Size, ConstantOfShape, Range, EyeLike, Trilu
void add_reduce_ops(OpTable& table);       // Reduce*, ArgMax, Softmax, CumSum, ...
void add_nn_ops(OpTable& table);           // MatMul, Gemm, Conv, pools, norms, ...
void add_loss_ops(OpTable& table);         // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void add_attention_ops(OpTable& table);    // Attention
void add_resize_ops(OpTable& table);       // Resize
void add_rotary_ops(OpTable& table);       // RotaryEmbedding
void add_state_space_ops(OpTable& table);  // LinearAttention, CausalConvWithState
void add_quantize_ops(OpTable& table);     // DequantizeLinear, QuantizeLinear, DynamicQuantizeLinear
void add_grid_ops(OpTable& table);         // AffineGrid, GridSample
void add_rnn_ops(OpTable& table);          // RNN, GRU, LSTM
void add_training_ops(OpTable& table);     // Adagrad, Adam, Momentum (ai.onnx.preview.training)
void add_sequence_axis_ops(OpTable& table);  // ReverseSequence, TensorScatter
void add_spectral_ops(OpTable& table);     // DFT
void add_legacy_ops(OpTable& table);       // Upsample, Scatter (opsets before 13); after the others

// Refuses an op whose form at the model's opset (before 13) lumen does not read.
void check_opset_form(NodeContext& n);

}  // namespace lumen::onnx

#include "lumen/io/onnx/op_table.h"

namespace lumen::onnx {

std::string op_key(const std::string& domain, const std::string& op_type) {
  return domain.empty() || domain == "ai.onnx" ? op_type : domain + ":" + op_type;
}

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    add_control_ops(t);
    add_elementwise_ops(t);
    add_unary_ops(t);
    add_movement_ops(t);
    add_shape_ops(t);
    add_reduce_ops(t);
    add_nn_ops(t);
    add_loss_ops(t);
    add_attention_ops(t);
    add_resize_ops(t);
    add_rotary_ops(t);
    add_state_space_ops(t);
    add_quantize_ops(t);
    add_grid_ops(t);
    add_rnn_ops(t);
    add_training_ops(t);
    add_sequence_axis_ops(t);
    add_spectral_ops(t);
    add_legacy_ops(t);
    return t;
  }();
  return table;
}

}  // namespace lumen::onnx

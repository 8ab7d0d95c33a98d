#include "lumen/models/onnx_program.h"

namespace lumen::onnx {

Program compile(const Model& model, const CompileOptions& options) {
  Program p = lumen::compile(*model.graph, {}, options);
  for (const auto& [name, data] : model.weights) {
    if (p.graph().find_input(name) >= 0) p.set(name, data);
  }
  return p;
}

}  // namespace lumen::onnx

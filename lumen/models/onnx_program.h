// An imported ONNX model compiled into a Program with its weights set.
#pragma once

#include "lumen/compile.h"
#include "lumen/io/onnx/model.h"

namespace lumen::onnx {

// Compiles the model's outputs and sets every weight; set the model's
// `inputs` on the result, run, and get its `outputs` by name.
Program compile(const Model& model, const CompileOptions& options = {});

}  // namespace lumen::onnx

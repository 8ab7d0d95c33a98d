// lumen::onnx::load — an ONNX model file as a lumen graph plus its weights.
//
//   lumen::onnx::Model m = lumen::onnx::load("model.onnx");
//   lumen::Program p = lumen::onnx::compile(m);   // lumen/models/onnx_program.h
//   p.set("input", array); p.run(); p.get(m.outputs[0]);
//
// Opsets 7 (older op forms refused per op) up to the newest the build's
// onnx.proto knows; every node maps onto lumen's ops (no new primitives). An unsupported op, attribute or
// element type is a lumen::Error naming the node, its op type and what is
// unsupported. See README.md for the mapping rules.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lumen/core/array.h"
#include "lumen/core/graph.h"

namespace lumen::onnx {

struct LoadOptions {
  // Values for graph inputs that the model uses as shapes / axes / sizes
  // (e.g. Reshape's `shape` fed as an input): they are fixed at import, and
  // the input becomes a weight of the model instead of a run-time input.
  std::map<std::string, Array> fixed_inputs;
  // Import into this graph instead of a new one, with every name the model
  // adds to it (inputs, weights, outputs, dynamic dims) prefixed by `prefix`:
  // several models in one graph compile together (one compiler run).
  std::shared_ptr<Graph> graph;
  std::string prefix;
};

struct Model {
  std::shared_ptr<Graph> graph;
  std::vector<std::string> inputs;   // run-time inputs of `graph`, in the model's order (prefixed)
  std::vector<std::string> outputs;  // marked outputs of `graph`, in the model's order (prefixed)
  // Parameters of `graph` and their data (initializers, constants): set them
  // on a compiled Program before running (onnx::compile does).
  std::vector<std::pair<std::string, Array>> weights;
  int opset = 0;
  std::string producer;  // e.g. "pytorch 2.5"
};

Model load(const std::string& path, const LoadOptions& options = {});
// From the bytes of a .onnx file (external data is refused: it needs a folder).
Model load_bytes(const std::string& bytes, const LoadOptions& options = {}, const std::string& origin = "<bytes>");

}  // namespace lumen::onnx

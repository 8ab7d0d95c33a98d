#include "lumen/io/onnx/model.h"

#include <climits>
#include <filesystem>
#include <fstream>

#include "lumen/core/error.h"
#include "lumen/io/onnx/importer.h"
#include "onnx/onnx.pb.h"

namespace lumen::onnx {

namespace {

constexpr int kMinOpset = 7;  // older forms of ops are refused per op (check_opset_form)
constexpr int kMaxOpset = LUMEN_ONNX_MAX_OPSET;

int default_opset(const ::onnx::ModelProto& m, const std::string& origin) {
  int opset = -1;
  bool training = false;
  for (const auto& o : m.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(o.version());
    training = training || o.domain() == "ai.onnx.preview.training";
  }
  if (opset < 0 && training) return kMaxOpset;  // optimizer ops only: no default-domain op to version
  if (opset < 0) fail("onnx: ", origin, ": the model imports no default-domain opset");
  if (opset < kMinOpset || opset > kMaxOpset) {
    fail("onnx: ", origin, ": opset ", opset, " is not supported (lumen reads opsets ", kMinOpset, " to ", kMaxOpset,
         "; convert the model with onnx.version_converter)");
  }
  return opset;
}

Model import(const std::string& bytes, const LoadOptions& options, const std::string& origin, const std::string& folder) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    fail("onnx: ", origin, " is ", bytes.size(), " bytes; protobuf files are limited to 2 GiB (store weights as external data)");
  }
  ::onnx::ModelProto proto;
  if (!proto.ParseFromString(bytes)) {
    fail("onnx: ", origin, " is not a valid ONNX model (protobuf parsing failed: truncated or corrupt file)");
  }
  if (!proto.has_graph()) fail("onnx: ", origin, " has no graph");
  Model model;
  model.graph = options.graph ? options.graph : std::make_shared<Graph>();
  model.opset = default_opset(proto, origin);
  model.producer = proto.producer_name() + (proto.producer_version().empty() ? "" : " " + proto.producer_version());
  if (proto.functions_size() > 0) fail("onnx: ", origin, ": model-local functions are not supported");
  Importer importer(model, options, folder, model.opset);
  importer.import_main(proto.graph());
  return model;
}

}  // namespace

Model load(const std::string& path, const LoadOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) && !fs::exists(path, ec)) fail("onnx: no such file: ", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("onnx: cannot open ", path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail("onnx: reading ", path, " failed");
  std::string folder = fs::path(path).parent_path().string();
  return import(bytes, options, path, folder.empty() ? "." : folder);
}

Model load_bytes(const std::string& bytes, const LoadOptions& options, const std::string& origin) {
  return import(bytes, options, origin, "");
}

}  // namespace lumen::onnx

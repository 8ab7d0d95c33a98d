// lumen::onnx::load: models written with the generated protobuf classes, run
// on the interpreter, and every error path the importer promises.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "lumen/io/onnx/model.h"
#include "lumen/models/onnx_program.h"
#include "onnx/onnx.pb.h"

namespace lumen::onnx {
namespace {

using ::onnx::ModelProto;
using ::onnx::TensorProto;

::onnx::NodeProto* add_node(ModelProto& m, const std::string& op, std::vector<std::string> in,
                            std::vector<std::string> out, const std::string& name = "") {
  ::onnx::NodeProto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
  return n;
}

void add_io(::onnx::ValueInfoProto* v, const std::string& name, int type, std::vector<std::string> dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  t->mutable_shape();  // rank 0 when no dims follow
  for (const auto& d : dims) {
    auto* dim = t->mutable_shape()->add_dim();
    if (std::isdigit(static_cast<unsigned char>(d[0]))) dim->set_dim_value(std::stoll(d)); else dim->set_dim_param(d);
  }
}

ModelProto base_model(int opset = 17) {
  ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

TensorProto* add_initializer(ModelProto& m, const std::string& name, int type, std::vector<int64_t> dims) {
  TensorProto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  return t;
}

// y = relu(x @ w + b), x [batch, 2] with a dynamic batch.
ModelProto linear_model() {
  ModelProto m = base_model();
  add_io(m.mutable_graph()->add_input(), "x", TensorProto::FLOAT, {"batch", "2"});
  add_io(m.mutable_graph()->add_output(), "y", TensorProto::FLOAT, {"batch", "3"});
  TensorProto* w = add_initializer(m, "w", TensorProto::FLOAT, {2, 3});
  for (float v : {1.f, 2.f, 3.f, -4.f, 5.f, -6.f}) w->add_float_data(v);
  TensorProto* b = add_initializer(m, "b", TensorProto::FLOAT, {3});
  float bias[3] = {0.5f, -100.f, 0.f};
  b->set_raw_data(std::string(reinterpret_cast<const char*>(bias), sizeof(bias)));
  add_node(m, "MatMul", {"x", "w"}, {"h"});
  add_node(m, "Add", {"h", "b"}, {"z"});
  add_node(m, "Relu", {"z"}, {"y"});
  return m;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(OnnxImport, LinearModelRunsWithADynamicBatch) {
  Model model = load_bytes(linear_model().SerializeAsString());
  ASSERT_EQ(model.inputs, std::vector<std::string>{"x"});
  ASSERT_EQ(model.outputs, std::vector<std::string>{"y"});
  EXPECT_EQ(model.graph->dim_names(), std::vector<std::string>{"batch"});
  CompileOptions o;
  o.backend = Backend::Interp;
  Program p = compile(model, o);
  p.set("x", Array::from_floats({1, 1, 2, 0, 0, -1}, {3, 2}));
  p.run();
  std::vector<float> y = p.get("y").to_floats();
  // rows: [1,1] -> [-3+0.5, 7-100, -3] ; [2,0] -> [2.5, 4-100, 6] ; [0,-1] -> [4.5, -5-100, 6]
  std::vector<float> want = {0, 0, 0, 2.5f, 0, 6, 4.5f, 0, 6};
  EXPECT_EQ(y, want);
}

TEST(OnnxImport, ShapeArithmeticIsFoldedAtImport) {
  ModelProto m = base_model();
  add_io(m.mutable_graph()->add_input(), "x", TensorProto::FLOAT, {"n", "4"});
  add_io(m.mutable_graph()->add_output(), "y", TensorProto::FLOAT, {"n", "2", "2"});
  TensorProto* two = add_initializer(m, "two", TensorProto::INT64, {1});
  two->add_int64_data(2);
  add_node(m, "Shape", {"x"}, {"s"});
  auto* g = add_node(m, "Gather", {"s", "zero"}, {"n0"});
  (void)g;
  TensorProto* zero = add_initializer(m, "zero", TensorProto::INT64, {1});
  zero->add_int64_data(0);
  add_node(m, "Concat", {"n0", "two", "two"}, {"shape"})->add_attribute()->set_name("axis");
  m.mutable_graph()->mutable_node(2)->mutable_attribute(0)->set_type(::onnx::AttributeProto::INT);
  add_node(m, "Reshape", {"x", "shape"}, {"y"});
  Model model = load_bytes(m.SerializeAsString());
  const Node& out = model.graph->node(model.graph->outputs()[0].edge.node);
  EXPECT_EQ(model.graph->outputs()[0].edge.view.shape().size(), 3u);
  (void)out;
}

TEST(OnnxImport, UnsupportedOpNamesTheNodeAndOpType) {
  ModelProto m = linear_model();
  add_node(m, "NoSuchOp", {"y"}, {"q"}, "mystery");
  std::string msg = message_of([&] { load_bytes(m.SerializeAsString()); });
  EXPECT_NE(msg.find("'mystery'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("NoSuchOp"), std::string::npos) << msg;
}

TEST(OnnxImport, UnknownAttributeIsNamed) {
  ModelProto m = linear_model();
  auto* a = m.mutable_graph()->mutable_node(2)->add_attribute();
  a->set_name("frobnicate");
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(1);
  m.mutable_graph()->mutable_node(2)->set_name("act");
  std::string msg = message_of([&] { load_bytes(m.SerializeAsString()); });
  EXPECT_NE(msg.find("'frobnicate'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'act' (Relu)"), std::string::npos) << msg;
}

TEST(OnnxImport, Int64DataOutOfInt32RangeIsAnErrorNotNarrowed) {
  ModelProto m = base_model();
  add_io(m.mutable_graph()->add_input(), "x", TensorProto::INT64, {"3"});
  add_io(m.mutable_graph()->add_output(), "y", TensorProto::INT64, {"3"});
  TensorProto* big = add_initializer(m, "big", TensorProto::INT64, {3});
  for (int64_t v : {int64_t{1}, int64_t{1} << 40, int64_t{3}}) big->add_int64_data(v);
  add_node(m, "Add", {"x", "big"}, {"y"});
  std::string msg = message_of([&] { load_bytes(m.SerializeAsString()); });
  EXPECT_NE(msg.find("1099511627776"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not fit in int32"), std::string::npos) << msg;
}

TEST(OnnxImport, Float64IsRefusedClearly) {
  ModelProto m = base_model();
  add_io(m.mutable_graph()->add_input(), "x", TensorProto::DOUBLE, {"3"});
  add_io(m.mutable_graph()->add_output(), "y", TensorProto::DOUBLE, {"3"});
  add_node(m, "Relu", {"x"}, {"y"});
  std::string msg = message_of([&] { load_bytes(m.SerializeAsString()); });
  EXPECT_NE(msg.find("float64"), std::string::npos) << msg;
}

TEST(OnnxImport, TruncatedAndGarbageFilesGiveErrors) {
  std::string bytes = linear_model().SerializeAsString();
  for (size_t cut : {size_t{0}, size_t{3}, bytes.size() / 2, bytes.size() - 1}) {
    std::string msg = message_of([&] { load_bytes(bytes.substr(0, cut)); });
    EXPECT_NE(msg.find("onnx:"), std::string::npos) << cut << ": " << msg;
  }
  EXPECT_NE(message_of([] { load("/nonexistent/model.onnx"); }).find("no such file"), std::string::npos);
}

TEST(OnnxImport, OldOpsetIsRefused) {
  ModelProto m = linear_model();
  m.mutable_opset_import(0)->set_version(9);
  EXPECT_NE(message_of([&] { load_bytes(m.SerializeAsString()); }).find("opset 9"), std::string::npos);
}

TEST(OnnxImport, ExternalDataInsideTheFolderLoadsOutsideIsRefused) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("lumen_onnx_ext_" + std::to_string(::getpid()));
  fs::create_directories(dir / "model");
  float w[6] = {1, 2, 3, -4, 5, -6};
  std::ofstream(dir / "model" / "w.bin", std::ios::binary).write(reinterpret_cast<const char*>(w), sizeof(w));
  std::ofstream(dir / "secret.bin", std::ios::binary).write(reinterpret_cast<const char*>(w), sizeof(w));
  auto with_location = [&](const std::string& location) {
    ModelProto m = linear_model();
    TensorProto* t = m.mutable_graph()->mutable_initializer(0);
    t->clear_float_data();
    t->set_data_location(TensorProto::EXTERNAL);
    auto* kv = t->add_external_data();
    kv->set_key("location");
    kv->set_value(location);
    std::ofstream(dir / "model" / "m.onnx", std::ios::binary) << m.SerializeAsString();
    return (dir / "model" / "m.onnx").string();
  };
  Model ok = load(with_location("w.bin"));
  EXPECT_EQ(ok.weights.size(), 2u);
  std::string msg = message_of([&] { load(with_location("../secret.bin")); });
  EXPECT_NE(msg.find("outside the model's folder"), std::string::npos) << msg;
  msg = message_of([&] { load(with_location("missing.bin")); });
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
  fs::remove_all(dir);
}

// If with a constant condition takes its branch; Loop with a constant trip count unrolls.
TEST(OnnxImport, ConstantControlFlowIsUnrolledRunTimeConditionIsAnError) {
  ModelProto m = base_model();
  add_io(m.mutable_graph()->add_input(), "x", TensorProto::FLOAT, {"2"});
  add_io(m.mutable_graph()->add_input(), "c", TensorProto::BOOL, {});
  add_io(m.mutable_graph()->add_output(), "y", TensorProto::FLOAT, {"2"});
  auto* cond = add_node(m, "If", {"c"}, {"y"}, "branch");
  for (const char* which : {"then_branch", "else_branch"}) {
    auto* a = cond->add_attribute();
    a->set_name(which);
    a->set_type(::onnx::AttributeProto::GRAPH);
    auto* g = a->mutable_g();
    auto* n = g->add_node();
    n->set_op_type(std::string(which) == "then_branch" ? "Neg" : "Abs");
    n->add_input("x");
    n->add_output("o");
    add_io(g->add_output(), "o", TensorProto::FLOAT, {"2"});
  }
  std::string msg = message_of([&] { load_bytes(m.SerializeAsString()); });
  EXPECT_NE(msg.find("'branch' (If)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("run time"), std::string::npos) << msg;
  LoadOptions fixed;
  Array yes(DType::Bool, {});
  yes.set(0, 1);
  fixed.fixed_inputs["c"] = yes;
  Model model = load_bytes(m.SerializeAsString(), fixed);
  CompileOptions o;
  o.backend = Backend::Interp;
  Program p = compile(model, o);
  p.set("x", Array::from_floats({1, -2}, {2}));
  p.run();
  EXPECT_EQ(p.get("y").to_floats(), (std::vector<float>{-1, 2}));
}

// Found by the fuzz target: a Loop body with fewer outputs than the loop carries.
TEST(OnnxImport, LoopBodyWithTooFewOutputsIsAnError) {
  ModelProto m = base_model();
  add_io(m.mutable_graph()->add_input(), "x", TensorProto::FLOAT, {"2"});
  add_io(m.mutable_graph()->add_output(), "y", TensorProto::FLOAT, {"2"});
  TensorProto* trips = add_initializer(m, "m", TensorProto::INT64, {});
  trips->add_int64_data(2);
  auto* loop = add_node(m, "Loop", {"m", "", "x"}, {"y"}, "loop");
  auto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(::onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name("body");  // no inputs, no outputs
  std::string msg = message_of([&] { load_bytes(m.SerializeAsString()); });
  EXPECT_NE(msg.find("'loop' (Loop)"), std::string::npos) << msg;
}

}  // namespace
}  // namespace lumen::onnx

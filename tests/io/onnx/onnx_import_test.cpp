// lumen::onnx::load: models written with the generated protobuf classes, run
// on the interpreter, and every error path the importer promises.
#include <gtest/gtest.h>

#include <cmath>
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

Program interp_program(const Model& model) {
  CompileOptions o;
  o.backend = Backend::Interp;
  return compile(model, o);
}

// int64 stays I64: a run-time value past 2^31 (here 2^40 + 2) minus an
// initializer past 2^31 gives an index that must land exactly (narrowed to
// int32 both would wrap and the Gather would read another element).
TEST(OnnxImport, Int64PastInt32StaysExactThroughArithmeticAndGather) {
  ModelProto m = base_model();
  add_io(m.mutable_graph()->add_input(), "x", TensorProto::INT64, {"1"});
  add_io(m.mutable_graph()->add_output(), "y", TensorProto::INT64, {"1"});
  add_io(m.mutable_graph()->add_output(), "z", TensorProto::INT64, {"1"});
  TensorProto* offset = add_initializer(m, "offset", TensorProto::INT64, {1});
  offset->add_int64_data(int64_t{1} << 40);
  TensorProto* table = add_initializer(m, "table", TensorProto::INT64, {4});
  for (int64_t v : {int64_t{10}, int64_t{11}, (int64_t{1} << 53) + 1, int64_t{13}}) table->add_int64_data(v);
  add_node(m, "Sub", {"x", "offset"}, {"idx"});
  add_node(m, "Gather", {"table", "idx"}, {"y"});
  add_node(m, "Add", {"x", "offset"}, {"z"});
  Model model = load_bytes(m.SerializeAsString());
  EXPECT_EQ(model.graph->dim_names().size(), 0u);
  Program p = interp_program(model);
  p.set("x", Array::from_int64s({(int64_t{1} << 40) + 2}, {1}));
  p.run();
  Array y = p.get("y"), z = p.get("z");
  ASSERT_EQ(y.dtype(), DType::I64);
  EXPECT_EQ(y.load(0).to_int(), (int64_t{1} << 53) + 1);  // past 2^53: no double holds it
  EXPECT_EQ(z.load(0).to_int(), (int64_t{1} << 41) + 2);
}

TEST(OnnxImport, Float64ComputesInDouble) {
  ModelProto m = base_model();
  add_io(m.mutable_graph()->add_input(), "x", TensorProto::DOUBLE, {"2"});
  add_io(m.mutable_graph()->add_output(), "y", TensorProto::DOUBLE, {"2"});
  TensorProto* third = add_initializer(m, "third", TensorProto::DOUBLE, {});
  third->add_double_data(1.0 / 3.0);
  add_node(m, "Mul", {"x", "third"}, {"y"});
  Program p = interp_program(load_bytes(m.SerializeAsString()));
  p.set("x", Array::from_doubles({1.0, 1e-300}, {2}));
  p.run();
  Array y = p.get("y");
  ASSERT_EQ(y.dtype(), DType::F64);
  EXPECT_EQ(y.get(0), 1.0 / 3.0);  // a float would round it
  EXPECT_EQ(y.get(1), 1e-300 / 3.0);  // below float's range
}

// float8 is held as its codes; Cast decodes them (NaN, signs, subnormals);
// arithmetic on the codes is refused by name.
TEST(OnnxImport, Float8CodesDecodeThroughCastAndRefuseArithmetic) {
  ModelProto m = base_model(21);
  add_io(m.mutable_graph()->add_input(), "x", TensorProto::FLOAT8E4M3FN, {"4"});
  add_io(m.mutable_graph()->add_output(), "y", TensorProto::FLOAT, {"4"});
  auto* cast = add_node(m, "Cast", {"x"}, {"y"});
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(::onnx::AttributeProto::INT);
  to->set_i(TensorProto::FLOAT);
  Program p = interp_program(load_bytes(m.SerializeAsString()));
  Array codes(DType::U8, {4});
  for (int k = 0; k < 4; ++k) codes.set(k, std::vector<double>{0x38, 0xC0, 0x01, 0x7F}[static_cast<size_t>(k)]);
  p.set("x", codes);
  p.run();
  std::vector<float> y = p.get("y").to_floats();
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], std::ldexp(1.0f, -9));  // the smallest subnormal
  EXPECT_TRUE(std::isnan(y[3]));
  ModelProto bad = base_model(21);
  add_io(bad.mutable_graph()->add_input(), "x", TensorProto::FLOAT8E4M3FN, {"4"});
  add_io(bad.mutable_graph()->add_output(), "y", TensorProto::FLOAT8E4M3FN, {"4"});
  add_node(bad, "Add", {"x", "x"}, {"y"}, "twice");
  std::string msg = message_of([&] { load_bytes(bad.SerializeAsString()); });
  EXPECT_NE(msg.find("'twice' (Add)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float8e4m3fn"), std::string::npos) << msg;
}

// int4 initializers arrive packed two to a byte, low nibble first.
TEST(OnnxImport, Int4InitializerUnpacksSignExtended) {
  ModelProto m = base_model(21);
  add_io(m.mutable_graph()->add_output(), "y", TensorProto::INT32, {"5"});
  TensorProto* q = add_initializer(m, "q", TensorProto::INT4, {5});
  q->set_raw_data(std::string("\xe1\x83\x07", 3));
  auto* cast = add_node(m, "Cast", {"q"}, {"y"});
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(::onnx::AttributeProto::INT);
  to->set_i(TensorProto::INT32);
  Program p = interp_program(load_bytes(m.SerializeAsString()));
  p.run();
  Array y = p.get("y");
  std::vector<int64_t> got;
  for (int64_t k = 0; k < 5; ++k) got.push_back(y.load(k).to_int());
  EXPECT_EQ(got, (std::vector<int64_t>{1, -2, 3, -8, 7}));
}

TEST(OnnxImport, TruncatedAndGarbageFilesGiveErrors) {
  std::string bytes = linear_model().SerializeAsString();
  for (size_t cut : {size_t{0}, size_t{3}, bytes.size() / 2, bytes.size() - 1}) {
    std::string msg = message_of([&] { load_bytes(bytes.substr(0, cut)); });
    EXPECT_NE(msg.find("onnx:"), std::string::npos) << cut << ": " << msg;
  }
  EXPECT_NE(message_of([] { load("/nonexistent/model.onnx"); }).find("no such file"), std::string::npos);
}

// Opsets 7 to 12 load where an op's form is the one lumen reads; an older
// form is refused naming the op; opsets before 7 are refused.
TEST(OnnxImport, OldOpsetsLoadPerOpAndOlderFormsAreRefused) {
  ModelProto m = linear_model();
  m.mutable_opset_import(0)->set_version(9);
  EXPECT_EQ(load_bytes(m.SerializeAsString()).opset, 9);
  m.mutable_opset_import(0)->set_version(6);
  EXPECT_NE(message_of([&] { load_bytes(m.SerializeAsString()); }).find("opset 6"), std::string::npos);
  ModelProto pad = base_model(10);
  add_io(pad.mutable_graph()->add_input(), "x", TensorProto::FLOAT, {"2"});
  add_io(pad.mutable_graph()->add_output(), "y", TensorProto::FLOAT, {"4"});
  add_node(pad, "Pad", {"x"}, {"y"}, "old_pad");
  std::string msg = message_of([&] { load_bytes(pad.SerializeAsString()); });
  EXPECT_NE(msg.find("'old_pad' (Pad)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("opset-10 form of Pad"), std::string::npos) << msg;
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

// If: a known condition takes its branch; a run-time one computes both
// branches and selects (branches of one shape); branches of different shapes
// need the condition fixed at import.
TEST(OnnxImport, IfTakesAKnownBranchOrSelectsAtRunTime) {
  auto model_with = [](const std::string& else_op) {
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
      n->set_op_type(std::string(which) == "then_branch" ? "Neg" : else_op);
      n->add_input("x");
      n->add_output("o");
      add_io(g->add_output(), "o", TensorProto::FLOAT, {"2"});
    }
    return m;
  };
  Program run_time = interp_program(load_bytes(model_with("Abs").SerializeAsString()));
  for (bool c : {true, false}) {
    Array flag(DType::Bool, {});
    flag.set(0, c ? 1 : 0);
    run_time.set("x", Array::from_floats({1, -2}, {2}));
    run_time.set("c", flag);
    run_time.run();
    EXPECT_EQ(run_time.get("y").to_floats(), c ? (std::vector<float>{-1, 2}) : (std::vector<float>{1, 2}));
  }
  ModelProto shapes = model_with("Shape");  // else gives a [1] int64: no elementwise select
  std::string msg = message_of([&] { load_bytes(shapes.SerializeAsString()); });
  EXPECT_NE(msg.find("'branch' (If)"), std::string::npos) << msg;
  LoadOptions fixed;
  Array yes(DType::Bool, {});
  yes.set(0, 1);
  fixed.fixed_inputs["c"] = yes;
  Program p = interp_program(load_bytes(shapes.SerializeAsString(), fixed));
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

// Found by the fuzz target: a pool with a zero stride (lumen's windows divide by it).
TEST(OnnxImport, PoolWithAZeroStrideIsAnError) {
  ModelProto m = base_model();
  add_io(m.mutable_graph()->add_input(), "x", TensorProto::FLOAT, {"1", "1", "4", "4"});
  add_io(m.mutable_graph()->add_output(), "y", TensorProto::FLOAT, {});
  auto* pool = add_node(m, "MaxPool", {"x"}, {"y"}, "pool");
  for (const char* name : {"kernel_shape", "strides"}) {
    auto* a = pool->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    a->add_ints(2);
    a->add_ints(std::string(name) == "strides" ? 0 : 2);
  }
  std::string msg = message_of([&] { load_bytes(m.SerializeAsString()); });
  EXPECT_NE(msg.find("'pool' (MaxPool)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("strides [2, 0]"), std::string::npos) << msg;
}

}  // namespace
}  // namespace lumen::onnx

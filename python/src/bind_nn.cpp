// Bindings for lumen/nn modules (submodule _lumen.nn).
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "lumen/nn/transformer.h"

namespace lumen::python {

namespace {

template <typename M>
nb::dict parameter_dict(const M& m) {
  nb::dict d;
  for (const auto& [name, t] : m.parameters()) d[nb::str(name.c_str())] = nb::cast(t);
  return d;
}

// Modules hold a Graph&; keep the Python graph alive alongside.
template <typename M>
struct Held {
  M module;
  std::shared_ptr<Graph> graph;
};

}  // namespace

void bind_nn(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("nn", "Modules with named parameters");
  using nb::arg;

#define LUMEN_MODULE_COMMON(M) \
  .def("parameters", [](const Held<M>& h) { return parameter_dict(h.module); }) \
      .def_prop_ro("prefix", [](const Held<M>& h) { return h.module.prefix(); })

  nb::class_<Held<nn::Linear>>(m, "Linear")
      .def("__init__", [](Held<nn::Linear>* self, PyGraph& g, const std::string& prefix, int64_t in, int64_t out,
                          bool bias) { new (self) Held<nn::Linear>{nn::Linear(*g.graph, prefix, in, out, bias), g.graph}; },
           arg("graph"), arg("prefix"), arg("in_features"), arg("out_features"), arg("bias") = true)
      .def("__call__", [](const Held<nn::Linear>& h, const Tensor& x) { return h.module(x); }) LUMEN_MODULE_COMMON(nn::Linear);

  nb::class_<Held<nn::Embedding>>(m, "Embedding")
      .def("__init__", [](Held<nn::Embedding>* self, PyGraph& g, const std::string& prefix, int64_t n, int64_t d) {
             new (self) Held<nn::Embedding>{nn::Embedding(*g.graph, prefix, n, d), g.graph};
           }, arg("graph"), arg("prefix"), arg("num_embeddings"), arg("embedding_dim"))
      .def("__call__", [](const Held<nn::Embedding>& h, const Tensor& x) { return h.module(x); }) LUMEN_MODULE_COMMON(nn::Embedding);

  nb::class_<Held<nn::LayerNorm>>(m, "LayerNorm")
      .def("__init__", [](Held<nn::LayerNorm>* self, PyGraph& g, const std::string& prefix, int64_t d, double eps) {
             new (self) Held<nn::LayerNorm>{nn::LayerNorm(*g.graph, prefix, d, eps), g.graph};
           }, arg("graph"), arg("prefix"), arg("dim"), arg("eps") = 1e-5)
      .def("__call__", [](const Held<nn::LayerNorm>& h, const Tensor& x) { return h.module(x); }) LUMEN_MODULE_COMMON(nn::LayerNorm);

  nb::class_<Held<nn::RMSNorm>>(m, "RMSNorm")
      .def("__init__", [](Held<nn::RMSNorm>* self, PyGraph& g, const std::string& prefix, int64_t d, double eps) {
             new (self) Held<nn::RMSNorm>{nn::RMSNorm(*g.graph, prefix, d, eps), g.graph};
           }, arg("graph"), arg("prefix"), arg("dim"), arg("eps") = 1e-6)
      .def("__call__", [](const Held<nn::RMSNorm>& h, const Tensor& x) { return h.module(x); }) LUMEN_MODULE_COMMON(nn::RMSNorm);

  nb::class_<Held<nn::GroupNorm>>(m, "GroupNorm")
      .def("__init__", [](Held<nn::GroupNorm>* self, PyGraph& g, const std::string& prefix, int64_t groups, int64_t c,
                          double eps) { new (self) Held<nn::GroupNorm>{nn::GroupNorm(*g.graph, prefix, groups, c, eps), g.graph}; },
           arg("graph"), arg("prefix"), arg("num_groups"), arg("num_channels"), arg("eps") = 1e-5)
      .def("__call__", [](const Held<nn::GroupNorm>& h, const Tensor& x) { return h.module(x); }) LUMEN_MODULE_COMMON(nn::GroupNorm);

  nb::class_<Held<nn::BatchNorm2d>>(m, "BatchNorm2d")
      .def("__init__", [](Held<nn::BatchNorm2d>* self, PyGraph& g, const std::string& prefix, int64_t c, double eps) {
             new (self) Held<nn::BatchNorm2d>{nn::BatchNorm2d(*g.graph, prefix, c, eps), g.graph};
           }, arg("graph"), arg("prefix"), arg("num_features"), arg("eps") = 1e-5)
      .def("__call__", [](const Held<nn::BatchNorm2d>& h, const Tensor& x) { return h.module(x); }) LUMEN_MODULE_COMMON(nn::BatchNorm2d);

  nb::class_<Held<nn::Conv1d>>(m, "Conv1d")
      .def("__init__", [](Held<nn::Conv1d>* self, PyGraph& g, const std::string& prefix, int64_t in, int64_t out,
                          int64_t k, int64_t s, int64_t p, int64_t d, int64_t groups, bool bias) {
             new (self) Held<nn::Conv1d>{nn::Conv1d(*g.graph, prefix, in, out, k, s, p, d, groups, bias), g.graph};
           }, arg("graph"), arg("prefix"), arg("in_channels"), arg("out_channels"), arg("kernel_size"), arg("stride") = 1,
           arg("padding") = 0, arg("dilation") = 1, arg("groups") = 1, arg("bias") = true)
      .def("__call__", [](const Held<nn::Conv1d>& h, const Tensor& x) { return h.module(x); }) LUMEN_MODULE_COMMON(nn::Conv1d);

  nb::class_<Held<nn::Conv2d>>(m, "Conv2d")
      .def("__init__", [](Held<nn::Conv2d>* self, PyGraph& g, const std::string& prefix, int64_t in, int64_t out,
                          ops::Pair k, ops::Pair s, ops::Pair p, ops::Pair d, int64_t groups, bool bias) {
             new (self) Held<nn::Conv2d>{nn::Conv2d(*g.graph, prefix, in, out, k, s, p, d, groups, bias), g.graph};
           }, arg("graph"), arg("prefix"), arg("in_channels"), arg("out_channels"), arg("kernel_size"),
           arg("stride") = ops::Pair{1, 1}, arg("padding") = ops::Pair{0, 0}, arg("dilation") = ops::Pair{1, 1},
           arg("groups") = 1, arg("bias") = true)
      .def("__call__", [](const Held<nn::Conv2d>& h, const Tensor& x) { return h.module(x); }) LUMEN_MODULE_COMMON(nn::Conv2d);

  nb::class_<Held<nn::MLP>>(m, "MLP")
      .def("__init__", [](Held<nn::MLP>* self, PyGraph& g, const std::string& prefix, int64_t dim, int64_t hidden,
                          const std::string& act, bool bias) {
             new (self) Held<nn::MLP>{nn::MLP(*g.graph, prefix, dim, hidden, act, bias), g.graph};
           }, arg("graph"), arg("prefix"), arg("dim"), arg("hidden"), arg("activation") = "gelu", arg("bias") = true)
      .def("__call__", [](const Held<nn::MLP>& h, const Tensor& x) { return h.module(x); }) LUMEN_MODULE_COMMON(nn::MLP);

  nb::class_<Held<nn::SwiGLU>>(m, "SwiGLU")
      .def("__init__", [](Held<nn::SwiGLU>* self, PyGraph& g, const std::string& prefix, int64_t dim, int64_t hidden,
                          bool bias) { new (self) Held<nn::SwiGLU>{nn::SwiGLU(*g.graph, prefix, dim, hidden, bias), g.graph}; },
           arg("graph"), arg("prefix"), arg("dim"), arg("hidden"), arg("bias") = false)
      .def("__call__", [](const Held<nn::SwiGLU>& h, const Tensor& x) { return h.module(x); }) LUMEN_MODULE_COMMON(nn::SwiGLU);

  auto attention_config = [](int64_t dim, int64_t heads, int64_t kv_heads, int64_t head_dim, bool causal,
                             std::optional<double> rope_theta, bool qkv_bias, bool out_bias) {
    nn::AttentionConfig c;
    c.dim = dim;
    c.heads = heads;
    c.kv_heads = kv_heads;
    c.head_dim = head_dim;
    c.causal = causal;
    c.rope_theta = rope_theta;
    c.qkv_bias = qkv_bias;
    c.out_bias = out_bias;
    return c;
  };

  nb::class_<Held<nn::MultiHeadAttention>>(m, "MultiHeadAttention")
      .def("__init__", [attention_config](Held<nn::MultiHeadAttention>* self, PyGraph& g, const std::string& prefix,
                                          int64_t dim, int64_t heads, int64_t kv_heads, int64_t head_dim, bool causal,
                                          std::optional<double> rope_theta, bool qkv_bias, bool out_bias) {
             new (self) Held<nn::MultiHeadAttention>{
                 nn::MultiHeadAttention(*g.graph, prefix, attention_config(dim, heads, kv_heads, head_dim, causal, rope_theta, qkv_bias, out_bias)),
                 g.graph};
           }, arg("graph"), arg("prefix"), arg("dim"), arg("heads"), arg("kv_heads") = 0, arg("head_dim") = 0,
           arg("causal") = true, arg("rope_theta") = nb::none(), arg("qkv_bias") = false, arg("out_bias") = false)
      .def("__call__", [](const Held<nn::MultiHeadAttention>& h, const Tensor& x, std::optional<Tensor> pk,
                          std::optional<Tensor> pv) {
             auto o = h.module(x, pk, pv);
             return std::make_tuple(o.out, o.keys, o.values);
           }, arg("x"), arg("past_keys") = nb::none(), arg("past_values") = nb::none()) LUMEN_MODULE_COMMON(nn::MultiHeadAttention);

  nb::class_<Held<nn::TransformerBlock>>(m, "TransformerBlock")
      .def("__init__", [attention_config](Held<nn::TransformerBlock>* self, PyGraph& g, const std::string& prefix,
                                          int64_t dim, int64_t heads, int64_t hidden, int64_t kv_heads, int64_t head_dim,
                                          std::optional<double> rope_theta, const std::string& norm, double norm_eps,
                                          const std::string& mlp, bool bias, bool causal) {
             nn::TransformerConfig c;
             c.attention = attention_config(dim, heads, kv_heads, head_dim, causal, rope_theta, bias, bias);
             c.hidden = hidden;
             c.norm = norm;
             c.norm_eps = norm_eps;
             c.mlp = mlp;
             c.mlp_bias = bias;
             new (self) Held<nn::TransformerBlock>{nn::TransformerBlock(*g.graph, prefix, c), g.graph};
           }, arg("graph"), arg("prefix"), arg("dim"), arg("heads"), arg("hidden"), arg("kv_heads") = 0,
           arg("head_dim") = 0, arg("rope_theta") = nb::none(), arg("norm") = "rms", arg("norm_eps") = 1e-6,
           arg("mlp") = "swiglu", arg("bias") = false, arg("causal") = true)
      .def("__call__", [](const Held<nn::TransformerBlock>& h, const Tensor& x, std::optional<Tensor> pk,
                          std::optional<Tensor> pv) {
             auto o = h.module(x, pk, pv);
             return std::make_tuple(o.out, o.keys, o.values);
           }, arg("x"), arg("past_keys") = nb::none(), arg("past_values") = nb::none()) LUMEN_MODULE_COMMON(nn::TransformerBlock);
#undef LUMEN_MODULE_COMMON
}

}  // namespace lumen::python

// Bindings for lumen/ops (submodule _lumen.ops). The Python package wraps
// these with PyTorch-style signatures (dim=, keepdim=, operators).
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace lumen::python {

void bind_ops(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("ops", "High-level ops composed from primitives");
  using namespace lumen::ops;
  using nb::arg;
  using T = const Tensor&;

  m.def("registry", [] {
    std::vector<std::tuple<std::string, std::string, std::string>> out;
    for (const OpInfo& info : op_registry()) out.emplace_back(info.name, info.pytorch, info.category);
    return out;
  }, "Every op with its PyTorch counterpart and category.");

  // elementwise
  m.def("promote_types", &lumen::ops::promote_types);
  m.def("add", &lumen::ops::add);
  m.def("sub", &lumen::ops::sub);
  m.def("mul", &lumen::ops::mul);
  m.def("div", &lumen::ops::div);
  m.def("floor_divide", &lumen::ops::floor_divide);
  m.def("remainder", &lumen::ops::remainder);
  m.def("fmod", &lumen::ops::fmod);
  m.def("pow", nb::overload_cast<T, T>(&lumen::ops::pow));
  m.def("pow_scalar", nb::overload_cast<T, double>(&lumen::ops::pow));
  m.def("neg", &lumen::ops::neg);
  m.def("abs", &lumen::ops::abs);
  m.def("sign", &lumen::ops::sign);
  m.def("minimum", &lumen::ops::minimum);
  m.def("maximum", &lumen::ops::maximum);
  m.def("clamp", &lumen::ops::clamp, arg("x"), arg("min") = nb::none(), arg("max") = nb::none());
  m.def("where", &lumen::ops::where);
  m.def("eq", &lumen::ops::eq);
  m.def("ne", &lumen::ops::ne);
  m.def("lt", &lumen::ops::lt);
  m.def("le", &lumen::ops::le);
  m.def("gt", &lumen::ops::gt);
  m.def("ge", &lumen::ops::ge);
  m.def("logical_and", &lumen::ops::logical_and);
  m.def("logical_or", &lumen::ops::logical_or);
  m.def("logical_xor", &lumen::ops::logical_xor);
  m.def("logical_not", &lumen::ops::logical_not);
  m.def("isnan", &lumen::ops::isnan);
  m.def("isinf", &lumen::ops::isinf);
  m.def("isfinite", &lumen::ops::isfinite);

  // math
  m.def("exp", &lumen::ops::exp);
  m.def("log", &lumen::ops::log);
  m.def("exp2", &lumen::ops::exp2);
  m.def("log2", &lumen::ops::log2);
  m.def("log10", &lumen::ops::log10);
  m.def("sqrt", &lumen::ops::sqrt);
  m.def("rsqrt", &lumen::ops::rsqrt);
  m.def("reciprocal", &lumen::ops::reciprocal);
  m.def("sin", &lumen::ops::sin);
  m.def("cos", &lumen::ops::cos);
  m.def("tan", &lumen::ops::tan);
  m.def("tanh", &lumen::ops::tanh);
  m.def("erf", &lumen::ops::erf);
  m.def("sigmoid", &lumen::ops::sigmoid);
  m.def("relu", &lumen::ops::relu);
  m.def("leaky_relu", &lumen::ops::leaky_relu, arg("x"), arg("negative_slope") = 0.01);
  m.def("gelu", &lumen::ops::gelu, arg("x"), arg("tanh_approximation") = false);
  m.def("silu", &lumen::ops::silu);
  m.def("softplus", &lumen::ops::softplus, arg("x"), arg("beta") = 1.0, arg("threshold") = 20.0);
  m.def("mish", &lumen::ops::mish);
  m.def("floor", &lumen::ops::floor);
  m.def("ceil", &lumen::ops::ceil);
  m.def("round", &lumen::ops::round);
  m.def("trunc", &lumen::ops::trunc);

  // reductions
  m.def("sum", &lumen::ops::sum, arg("x"), arg("axes") = Axes{}, arg("keepdim") = false);
  m.def("mean", &lumen::ops::mean, arg("x"), arg("axes") = Axes{}, arg("keepdim") = false);
  m.def("amax", &lumen::ops::amax, arg("x"), arg("axes") = Axes{}, arg("keepdim") = false);
  m.def("amin", &lumen::ops::amin, arg("x"), arg("axes") = Axes{}, arg("keepdim") = false);
  m.def("prod", &lumen::ops::prod, arg("x"), arg("axes") = Axes{}, arg("keepdim") = false);
  m.def("var", &lumen::ops::var, arg("x"), arg("axes") = Axes{}, arg("correction") = 1.0, arg("keepdim") = false);
  m.def("std", &lumen::ops::std, arg("x"), arg("axes") = Axes{}, arg("correction") = 1.0, arg("keepdim") = false);
  m.def("logsumexp", &lumen::ops::logsumexp, arg("x"), arg("axes"), arg("keepdim") = false);
  m.def("all", &lumen::ops::all, arg("x"), arg("axes") = Axes{}, arg("keepdim") = false);
  m.def("any", &lumen::ops::any, arg("x"), arg("axes") = Axes{}, arg("keepdim") = false);
  m.def("argmax", &lumen::ops::argmax, arg("x"), arg("axis") = nb::none(), arg("keepdim") = false);
  m.def("argmin", &lumen::ops::argmin, arg("x"), arg("axis") = nb::none(), arg("keepdim") = false);
  m.def("cumsum", &lumen::ops::cumsum);
  m.def("cumprod", &lumen::ops::cumprod);
  m.def("softmax", &lumen::ops::softmax, arg("x"), arg("axis") = -1);
  m.def("log_softmax", &lumen::ops::log_softmax, arg("x"), arg("axis") = -1);

  // movement (shapes come in as Python sequences; see the package wrappers)
  m.def("permute", &lumen::ops::permute);
  m.def("transpose", &lumen::ops::transpose);
  m.def("squeeze", &lumen::ops::squeeze, arg("x"), arg("dims") = std::vector<int>{});
  m.def("unsqueeze", &lumen::ops::unsqueeze);
  m.def("flatten", &lumen::ops::flatten, arg("x"), arg("start") = 0, arg("end") = -1);
  m.def("slice", &lumen::ops::slice, arg("x"), arg("dim"), arg("start") = nb::none(), arg("end") = nb::none(), arg("step") = 1);
  m.def("narrow", &lumen::ops::narrow);
  m.def("flip", &lumen::ops::flip);
  m.def("pad", &lumen::ops::pad, arg("x"), arg("pads"), arg("mode") = "constant", arg("value") = 0.0);
  m.def("concat", &lumen::ops::concat, arg("tensors"), arg("dim") = 0);
  m.def("stack", &lumen::ops::stack, arg("tensors"), arg("dim") = 0);
  m.def("split", nb::overload_cast<T, int64_t, int>(&lumen::ops::split), arg("x"), arg("split_size"), arg("dim") = 0);
  m.def("split_sizes", nb::overload_cast<T, const std::vector<int64_t>&, int>(&split), arg("x"), arg("sizes"),
        arg("dim") = 0);
  m.def("chunk", &lumen::ops::chunk, arg("x"), arg("chunks"), arg("dim") = 0);
  m.def("repeat", &lumen::ops::repeat);
  m.def("tile", &lumen::ops::tile);
  m.def("roll", &lumen::ops::roll, arg("x"), arg("shifts"), arg("dims") = std::vector<int>{});

  // indexing
  m.def("gather", &lumen::ops::gather);
  m.def("take_along_dim", &lumen::ops::take_along_dim);
  m.def("index_select", &lumen::ops::index_select);
  m.def("embedding", &lumen::ops::embedding);
  m.def("one_hot", &lumen::ops::one_hot);

  // linear algebra
  m.def("matmul", &lumen::ops::matmul);
  m.def("bmm", &lumen::ops::bmm);
  m.def("linear", &lumen::ops::linear, arg("x"), arg("weight"), arg("bias") = nb::none());
  m.def("outer", &lumen::ops::outer);
  m.def("einsum", &lumen::ops::einsum);

  // creation (graph-level; the package passes the graph)
  m.def("full", [](PyGraph& g, nb::handle shape, nb::handle v, DType d) {
    Shape s = shape_from_python(*g.graph, shape);
    // Python ints fill integer tensors exactly (an int64 past 2^53 has no double).
    if (nb::isinstance<nb::int_>(v) && !nb::isinstance<nb::bool_>(v) && !is_float(d)) return full_int(*g.graph, s, nb::cast<int64_t>(v), d);
    return full(*g.graph, s, nb::cast<double>(v), d);
  });
  m.def("arange", [](PyGraph& g, double a, double b, double s, DType d) { return arange(*g.graph, a, b, s, d); });
  m.def("linspace", [](PyGraph& g, double a, double b, int64_t n, DType d) { return linspace(*g.graph, a, b, n, d); });
  m.def("eye", [](PyGraph& g, int64_t n, int64_t k, DType d) { return eye(*g.graph, n, k, d); });
  m.def("rand", [](PyGraph& g, nb::handle shape, uint64_t seed, DType d) { return rand(*g.graph, shape_from_python(*g.graph, shape), seed, d); });
  m.def("randn", [](PyGraph& g, nb::handle shape, uint64_t seed, DType d) { return randn(*g.graph, shape_from_python(*g.graph, shape), seed, d); });
  m.def("tril", &lumen::ops::tril, arg("x"), arg("diagonal") = 0);
  m.def("triu", &lumen::ops::triu, arg("x"), arg("diagonal") = 0);

  // nn functional
  m.def("layer_norm", &lumen::ops::layer_norm, arg("x"), arg("normalized_dims"), arg("weight") = nb::none(),
        arg("bias") = nb::none(), arg("eps") = 1e-5);
  m.def("rms_norm", &lumen::ops::rms_norm, arg("x"), arg("normalized_dims"), arg("weight") = nb::none(), arg("eps") = nb::none());
  m.def("group_norm", &lumen::ops::group_norm, arg("x"), arg("groups"), arg("weight") = nb::none(), arg("bias") = nb::none(),
        arg("eps") = 1e-5);
  m.def("batch_norm", &lumen::ops::batch_norm, arg("x"), arg("running_mean"), arg("running_var"), arg("weight") = nb::none(),
        arg("bias") = nb::none(), arg("eps") = 1e-5);
  m.def("dropout", &lumen::ops::dropout, arg("x"), arg("p") = 0.5, arg("training") = false, arg("seed") = 0);
  m.def("conv1d", &lumen::ops::conv1d, arg("x"), arg("weight"), arg("bias") = nb::none(), arg("stride") = 1, arg("padding") = 0,
        arg("dilation") = 1, arg("groups") = 1);
  m.def("conv2d", &lumen::ops::conv2d, arg("x"), arg("weight"), arg("bias") = nb::none(), arg("stride") = Pair{1, 1},
        arg("padding") = Pair{0, 0}, arg("dilation") = Pair{1, 1}, arg("groups") = 1);
  m.def("conv_transpose2d", &lumen::ops::conv_transpose2d, arg("x"), arg("weight"), arg("bias") = nb::none(),
        arg("stride") = Pair{1, 1}, arg("padding") = Pair{0, 0}, arg("output_padding") = Pair{0, 0},
        arg("groups") = 1, arg("dilation") = Pair{1, 1});
  m.def("max_pool2d", &lumen::ops::max_pool2d, arg("x"), arg("kernel"), arg("stride") = Pair{0, 0}, arg("padding") = Pair{0, 0},
        arg("dilation") = Pair{1, 1}, arg("ceil_mode") = false);
  m.def("avg_pool2d", &lumen::ops::avg_pool2d, arg("x"), arg("kernel"), arg("stride") = Pair{0, 0}, arg("padding") = Pair{0, 0},
        arg("ceil_mode") = false, arg("count_include_pad") = true);
  m.def("adaptive_avg_pool2d", &lumen::ops::adaptive_avg_pool2d);
  m.def("interpolate", &lumen::ops::interpolate, arg("x"), arg("size") = nb::none(), arg("scale_factor") = nb::none(),
        arg("mode") = "nearest", arg("align_corners") = false);
  m.def("scaled_dot_product_attention", &lumen::ops::scaled_dot_product_attention, arg("q"), arg("k"), arg("v"),
        arg("attn_mask") = nb::none(), arg("is_causal") = false, arg("scale") = nb::none(),
        arg("enable_gqa") = false);
  m.def("cross_entropy", &lumen::ops::cross_entropy, arg("input"), arg("target"), arg("reduction") = "mean",
        arg("label_smoothing") = 0.0);
  m.def("mse_loss", &lumen::ops::mse_loss, arg("input"), arg("target"), arg("reduction") = "mean");
}

}  // namespace lumen::python

#include "lumen/nn/layers.h"

#include "lumen/core/error.h"
#include "lumen/ops/indexing.h"
#include "lumen/ops/linalg.h"
#include "lumen/ops/normalization.h"

namespace lumen::nn {

Linear::Linear(Graph& g, const std::string& prefix, int64_t in_features, int64_t out_features, bool has_bias, DType dtype)
    : Module(g, prefix) {
  if (in_features <= 0 || out_features <= 0) fail("Linear '", prefix, "': features must be positive");
  weight = parameter("weight", {out_features, in_features}, dtype);
  if (has_bias) bias = parameter("bias", {out_features}, dtype);
}

Tensor Linear::operator()(const Tensor& x) const { return ops::linear(x, weight, bias); }

Embedding::Embedding(Graph& g, const std::string& prefix, int64_t num, int64_t dim, DType dtype) : Module(g, prefix) {
  weight = parameter("weight", {num, dim}, dtype);
}

Tensor Embedding::operator()(const Tensor& indices) const { return ops::embedding(indices, weight); }

LayerNorm::LayerNorm(Graph& g, const std::string& prefix, int64_t dim, double eps_, bool affine)
    : Module(g, prefix), eps(eps_) {
  if (affine) {
    weight = parameter("weight", {dim});
    bias = parameter("bias", {dim});
  }
}

Tensor LayerNorm::operator()(const Tensor& x) const { return ops::layer_norm(x, 1, weight, bias, eps); }

RMSNorm::RMSNorm(Graph& g, const std::string& prefix, int64_t dim, double eps_) : Module(g, prefix), eps(eps_) {
  weight = parameter("weight", {dim});
}

Tensor RMSNorm::operator()(const Tensor& x) const { return ops::rms_norm(x, 1, weight, eps); }

GroupNorm::GroupNorm(Graph& g, const std::string& prefix, int64_t groups_, int64_t channels, double eps_)
    : Module(g, prefix), groups(groups_), eps(eps_) {
  weight = parameter("weight", {channels});
  bias = parameter("bias", {channels});
}

Tensor GroupNorm::operator()(const Tensor& x) const { return ops::group_norm(x, groups, weight, bias, eps); }

BatchNorm2d::BatchNorm2d(Graph& g, const std::string& prefix, int64_t channels, double eps_)
    : Module(g, prefix), eps(eps_) {
  weight = parameter("weight", {channels});
  bias = parameter("bias", {channels});
  running_mean = parameter("running_mean", {channels});
  running_var = parameter("running_var", {channels});
}

Tensor BatchNorm2d::operator()(const Tensor& x) const {
  return ops::batch_norm(x, running_mean, running_var, weight, bias, eps);
}

Conv1d::Conv1d(Graph& g, const std::string& prefix, int64_t in_channels, int64_t out_channels, int64_t kernel,
               int64_t stride_, int64_t padding_, int64_t dilation_, int64_t groups_, bool has_bias)
    : Module(g, prefix), stride(stride_), padding(padding_), dilation(dilation_), groups(groups_) {
  if (groups <= 0 || in_channels % groups != 0) fail("Conv1d '", prefix, "': in_channels must divide by groups");
  weight = parameter("weight", {out_channels, in_channels / groups, kernel});
  if (has_bias) bias = parameter("bias", {out_channels});
}

Tensor Conv1d::operator()(const Tensor& x) const { return ops::conv1d(x, weight, bias, stride, padding, dilation, groups); }

Conv2d::Conv2d(Graph& g, const std::string& prefix, int64_t in_channels, int64_t out_channels, ops::Pair kernel,
               ops::Pair stride_, ops::Pair padding_, ops::Pair dilation_, int64_t groups_, bool has_bias)
    : Module(g, prefix), stride(stride_), padding(padding_), dilation(dilation_), groups(groups_) {
  if (groups <= 0 || in_channels % groups != 0) fail("Conv2d '", prefix, "': in_channels must divide by groups");
  weight = parameter("weight", {out_channels, in_channels / groups, kernel[0], kernel[1]});
  if (has_bias) bias = parameter("bias", {out_channels});
}

Tensor Conv2d::operator()(const Tensor& x) const { return ops::conv2d(x, weight, bias, stride, padding, dilation, groups); }

}  // namespace lumen::nn

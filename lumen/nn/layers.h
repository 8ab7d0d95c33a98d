// Basic layers: Linear, Embedding, the norms, convolutions.
#pragma once

#include <optional>

#include "lumen/nn/module.h"
#include "lumen/ops/conv.h"

namespace lumen::nn {

class Linear : public Module {
 public:
  Linear(Graph& g, const std::string& prefix, int64_t in_features, int64_t out_features, bool bias = true,
         DType dtype = DType::F32);
  Tensor operator()(const Tensor& x) const;
  Tensor weight;               // [out, in]
  std::optional<Tensor> bias;  // [out]
};

class Embedding : public Module {
 public:
  Embedding(Graph& g, const std::string& prefix, int64_t num_embeddings, int64_t dim, DType dtype = DType::F32);
  Tensor operator()(const Tensor& indices) const;
  Tensor weight;  // [num, dim]
};

class LayerNorm : public Module {
 public:
  LayerNorm(Graph& g, const std::string& prefix, int64_t dim, double eps = 1e-5, bool affine = true);
  Tensor operator()(const Tensor& x) const;
  std::optional<Tensor> weight, bias;
  double eps;
};

class RMSNorm : public Module {
 public:
  RMSNorm(Graph& g, const std::string& prefix, int64_t dim, double eps = 1e-6);
  Tensor operator()(const Tensor& x) const;
  Tensor weight;
  double eps;
};

class GroupNorm : public Module {
 public:
  GroupNorm(Graph& g, const std::string& prefix, int64_t groups, int64_t channels, double eps = 1e-5);
  Tensor operator()(const Tensor& x) const;
  int64_t groups;
  Tensor weight, bias;
  double eps;
};

// Inference batch norm over dim 1 (running statistics are parameters).
class BatchNorm2d : public Module {
 public:
  BatchNorm2d(Graph& g, const std::string& prefix, int64_t channels, double eps = 1e-5);
  Tensor operator()(const Tensor& x) const;
  Tensor weight, bias, running_mean, running_var;
  double eps;
};

class Conv1d : public Module {
 public:
  Conv1d(Graph& g, const std::string& prefix, int64_t in_channels, int64_t out_channels, int64_t kernel,
         int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1, bool bias = true);
  Tensor operator()(const Tensor& x) const;
  Tensor weight;
  std::optional<Tensor> bias;
  int64_t stride, padding, dilation, groups;
};

class Conv2d : public Module {
 public:
  Conv2d(Graph& g, const std::string& prefix, int64_t in_channels, int64_t out_channels, ops::Pair kernel,
         ops::Pair stride = {1, 1}, ops::Pair padding = {0, 0}, ops::Pair dilation = {1, 1}, int64_t groups = 1,
         bool bias = true);
  Tensor operator()(const Tensor& x) const;
  Tensor weight;
  std::optional<Tensor> bias;
  ops::Pair stride, padding, dilation;
  int64_t groups;
};

}  // namespace lumen::nn

#include "lumen/dist/cost_model.h"

#include <algorithm>
#include <cmath>

#include "lumen/core/error.h"
#include "lumen/dist/model_plans.h"

namespace lumen::dist {

std::string PlanShape::name() const {
  std::vector<std::string> parts;
  if (tp > 1) parts.push_back("tp" + std::to_string(tp));
  if (pp > 1) parts.push_back("pp" + std::to_string(pp));
  if (dp > 1) parts.push_back("dp" + std::to_string(dp));
  if (parts.empty()) return "single";
  std::string s = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) s += " x " + parts[i];
  return s;
}

bool PlanShape::runnable() const { return dp == 1 && (tp == 1 || pp == 1); }

namespace {

constexpr double kActivationBytes = 4;  // f32 activations and KV cache

struct Layer {
  double flops = 0, weight_bytes = 0, kv_bytes = 0;
};

double layer_params(const models::LlamaConfig& c) {
  double d = static_cast<double>(c.dim), hd = static_cast<double>(c.head_dim);
  return d * static_cast<double>(c.heads + 2 * c.kv_heads) * hd + static_cast<double>(c.heads) * hd * d +
         3.0 * d * static_cast<double>(c.hidden);
}

// One layer over `seq` new tokens after `past` cached ones.
Layer layer_cost(const LlamaWorkload& w, double seq, double past) {
  const models::LlamaConfig& c = w.config;
  Layer l;
  double params = layer_params(c);
  double attention = 4.0 * static_cast<double>(c.heads * c.head_dim) * seq * (past + seq);
  l.flops = 2.0 * seq * params + attention;
  l.weight_bytes = params * w.weight_bytes_per_element;
  l.kv_bytes = 2.0 * static_cast<double>(c.kv_heads * c.head_dim) * (past + seq) * kActivationBytes;
  return l;
}

double roofline(double flops, double bytes, const MachineModel& m) { return std::max(flops / m.flops, bytes / m.bytes); }

double allreduce(double bytes, int ranks, const MachineModel& m) {
  if (ranks <= 1) return 0;
  return m.allreduce_latency + bytes * 2.0 * (ranks - 1) / ranks / m.allreduce_busbw;
}

double transfer(double bytes, const MachineModel& m) { return m.p2p_latency + bytes / m.p2p_bandwidth; }

struct StageTime {
  double compute = 0, comm = 0, overhead = 0;
  double total() const { return compute + comm + overhead; }
};

// One stage: `layers` layers (and the head when `last`) under tp-way sharding.
StageTime stage_time(const LlamaWorkload& w, int tp, int64_t layers, bool last, double seq, double past, const MachineModel& m) {
  const models::LlamaConfig& c = w.config;
  bool kv_split = c.kv_heads % tp == 0;
  Layer l = layer_cost(w, seq, past);
  StageTime t;
  double scale = seq > 1 ? m.prefill_compute_scale : m.decode_compute_scale;
  double per_layer = scale * roofline(l.flops / tp, l.weight_bytes / tp + l.kv_bytes / (kv_split ? tp : 1), m);
  t.compute = per_layer * static_cast<double>(layers);
  t.comm = 2.0 * static_cast<double>(layers) * allreduce(seq * static_cast<double>(c.dim) * kActivationBytes, tp, m);
  t.overhead = (tp > 1 ? 2.0 * static_cast<double>(layers) + 1 : 1) * m.segment_overhead;
  if (last) {  // the LM head over the last position
    double head = static_cast<double>(c.vocab * c.dim);
    bool split = !c.tie_embeddings && c.vocab % tp == 0;
    t.compute += scale * roofline(2.0 * head / (split ? tp : 1), head * w.weight_bytes_per_element / (split ? tp : 1), m);
    if (split && tp > 1) t.comm += m.allreduce_latency + static_cast<double>(c.vocab) * kActivationBytes / m.allreduce_busbw;
  }
  return t;
}

double memory_per_rank(const LlamaWorkload& w, const PlanShape& p) {
  const models::LlamaConfig& c = w.config;
  std::vector<int64_t> bounds = pipeline_layer_bounds(c.layers, p.pp);
  int64_t most_layers = 0;
  for (size_t s = 0; s + 1 < bounds.size(); ++s) most_layers = std::max(most_layers, bounds[s + 1] - bounds[s]);
  double embed = static_cast<double>(c.vocab * c.dim) * w.weight_bytes_per_element;
  double head = c.tie_embeddings ? 0 : embed / p.tp;
  double weights = static_cast<double>(most_layers) * layer_params(c) * w.weight_bytes_per_element / p.tp + embed + head;
  double sequences = std::ceil(static_cast<double>(w.sequences) / p.dp);
  double kv = sequences * static_cast<double>(most_layers) * 2.0 * static_cast<double>(c.kv_heads * c.head_dim) *
              static_cast<double>(w.capacity) * kActivationBytes / (c.kv_heads % p.tp == 0 ? p.tp : 1);
  return weights + kv;
}

StepEstimate finish(const LlamaWorkload& w, const PlanShape& p, const MachineModel& m, StageTime t, double pipeline_extra) {
  StepEstimate e;
  double sequences = std::ceil(static_cast<double>(w.sequences) / p.dp);  // a replica runs its sequences one by one
  e.compute_seconds = t.compute * sequences;
  e.comm_seconds = (t.comm + pipeline_extra) * sequences;
  e.overhead_seconds = t.overhead * sequences;
  e.seconds = e.compute_seconds + e.comm_seconds + e.overhead_seconds;
  e.memory_bytes = memory_per_rank(w, p);
  e.fits = m.memory_bytes <= 0 || e.memory_bytes <= m.memory_bytes;
  return e;
}

}  // namespace

StepEstimate estimate_decode(const LlamaWorkload& w, const PlanShape& p, const MachineModel& m) {
  w.config.validate();
  std::vector<int64_t> bounds = pipeline_layer_bounds(w.config.layers, p.pp);
  StageTime all;
  for (int s = 0; s < p.pp; ++s) {  // one token passes the stages one after another
    StageTime t = stage_time(w, p.tp, bounds[static_cast<size_t>(s) + 1] - bounds[static_cast<size_t>(s)], s == p.pp - 1, 1,
                             static_cast<double>(w.position), m);
    all.compute += t.compute;
    all.comm += t.comm;
    all.overhead += t.overhead;
  }
  double hops = (p.pp - 1) * transfer(static_cast<double>(w.config.dim) * kActivationBytes, m);
  return finish(w, p, m, all, hops);
}

StepEstimate estimate_prefill(const LlamaWorkload& w, const PlanShape& p, const MachineModel& m) {
  w.config.validate();
  std::vector<int64_t> bounds = pipeline_layer_bounds(w.config.layers, p.pp);
  double chunk = p.pp > 1 ? static_cast<double>(std::min(w.prefill_chunk, w.prompt)) : static_cast<double>(w.prompt);
  double chunks = std::ceil(static_cast<double>(w.prompt) / chunk);
  double past = static_cast<double>(w.prompt) / 2;  // chunks see on average half the prompt before them
  StageTime sum, slowest;
  for (int s = 0; s < p.pp; ++s) {
    StageTime t = stage_time(w, p.tp, bounds[static_cast<size_t>(s) + 1] - bounds[static_cast<size_t>(s)], s == p.pp - 1,
                             chunk, p.pp > 1 ? past : 0, m);
    sum.compute += t.compute;
    sum.comm += t.comm;
    sum.overhead += t.overhead;
    if (t.total() > slowest.total()) slowest = t;
  }
  // Chunks flow through the stages: the first passes every stage, the rest follow one slowest stage apart.
  StageTime total{sum.compute + (chunks - 1) * slowest.compute, sum.comm + (chunks - 1) * slowest.comm,
                  sum.overhead + (chunks - 1) * slowest.overhead};
  double hops = (p.pp - 1) * transfer(chunk * static_cast<double>(w.config.dim) * kActivationBytes, m);
  return finish(w, p, m, total, hops);
}

}  // namespace lumen::dist

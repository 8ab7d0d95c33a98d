// The cost model the plan search ranks plans with: a roofline per layer
// (time = the larger of FLOPs over the machine's FLOP rate and bytes moved
// over its memory bandwidth) plus communication (latency + bytes over
// bandwidth, ring all-reduce bus bandwidth) plus a fixed cost per segment
// program run. The machine's numbers are measured (calibration.h) or
// defaults; every figure carries which.
#pragma once

#include <string>
#include <vector>

#include "lumen/models/llama.h"

namespace lumen::dist {

struct MachineModel {
  double flops = 2e10;                 // per rank per second (f32 kernels)
  double bytes = 1e10;                 // per rank per second from memory
  double allreduce_latency = 2e-5;     // seconds
  double allreduce_busbw = 2e9;        // bytes per second (ring: 2 (n-1)/n of the message crosses each link)
  double p2p_latency = 1e-5;           // seconds
  double p2p_bandwidth = 4e9;          // bytes per second
  double segment_overhead = 2e-5;      // seconds per segment program run
  double memory_bytes = 0;             // per rank; 0: not checked
  // The model's own single-rank run against the roofline (measured time /
  // predicted compute): kernels reach a fraction of the matmul's rate, and
  // attention, norms and launches add to it. 1 until measured.
  double decode_compute_scale = 1, prefill_compute_scale = 1;
  std::string compute_source = "modeled", comm_source = "modeled";  // or "measured: ..."
};

// One way to lay a model over ranks: tp ranks split each layer's tensors,
// pp stages hold consecutive layers, dp replicas serve separate sequences.
struct PlanShape {
  int tp = 1, pp = 1, dp = 1;
  int ranks() const { return tp * pp * dp; }
  std::string name() const;  // "tp2", "pp2", "tp2 x pp4 x dp2"
  bool runnable() const;     // lumen runs it today (one of tp or pp over every rank)
};

// What one decode step or prefill costs under a plan.
struct StepEstimate {
  double seconds = 0, compute_seconds = 0, comm_seconds = 0, overhead_seconds = 0;
  double memory_bytes = 0;  // weights and KV cache per rank
  bool fits = true;         // within MachineModel::memory_bytes
};

struct LlamaWorkload {
  models::LlamaConfig config;
  double weight_bytes_per_element = 4;  // f32 (2: f16, ~1.06: q8_0, ...)
  int64_t prompt = 128;                 // prefill tokens
  int64_t position = 128;               // decode at this many cached positions
  int64_t capacity = 2048;              // KV-cache rows per sequence
  int64_t sequences = 1;                // concurrent sequences (dp replicas share them)
  int64_t prefill_chunk = 32;           // pipeline micro-batch (tokens)
};

// One decode step (a token for every sequence) and one prefill of `prompt` tokens.
StepEstimate estimate_decode(const LlamaWorkload& w, const PlanShape& plan, const MachineModel& m);
StepEstimate estimate_prefill(const LlamaWorkload& w, const PlanShape& plan, const MachineModel& m);

}  // namespace lumen::dist

// DeviceResidency — a compiled program's memory on a backend with its own
// memory (Capabilities::device_memory: a discrete GPU). The runtime plans
// memory on the host as always; this keeps the device twins: the arena,
// kept parameter packs and outputs as slots reused across runs, and each
// input's copy, copied up only when the input was set again since the last
// run (or its host memory moved or changed size): weights cross the bus
// once. CompiledExecutor copies states up before and down after every run
// (programs may share them) and outputs down after it.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <utility>

#include "lumen/backend/backend.h"
#include "lumen/core/graph.h"

namespace lumen {

class DeviceResidency {
 public:
  explicit DeviceResidency(std::shared_ptr<const backend::Backend> backend) : backend_(std::move(backend)) {}
  ~DeviceResidency();
  DeviceResidency(const DeviceResidency&) = delete;
  DeviceResidency& operator=(const DeviceResidency&) = delete;

  // Device memory for the arena, output `index` or kept pack `index`, of at
  // least `bytes`, kept across runs; a slot that must grow is allocated anew
  // (its contents are not kept).
  enum Kind { Arena, Output, Kept };
  void* slot(Kind kind, size_t index, size_t bytes);
  // The device copy of input `id` (host memory `host`, `bytes` long), copied
  // up on `queue` when `changed`, new, moved or resized.
  void* input(backend::Queue& queue, NodeId id, const void* host, size_t bytes, bool changed);

  size_t device_bytes() const;  // held on the device now

 private:
  struct Block {
    void* device = nullptr;
    size_t bytes = 0;          // allocated
    const void* host = nullptr;  // inputs: the host memory last copied up
    size_t used = 0;             // inputs: how much of it
  };
  Block& grow(Block& b, size_t bytes);

  std::shared_ptr<const backend::Backend> backend_;
  std::map<std::pair<Kind, size_t>, Block> slots_;
  std::map<NodeId, Block> inputs_;
};

}  // namespace lumen

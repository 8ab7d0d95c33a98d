#include "lumen/runtime/device_residency.h"

#include <algorithm>

namespace lumen {

DeviceResidency::~DeviceResidency() {
  for (auto& [key, b] : slots_) backend_->device_free(b.device);
  for (auto& [id, b] : inputs_) backend_->device_free(b.device);
}

// A block of at least `bytes` (one, for an empty buffer); a new one holds no host copy.
DeviceResidency::Block& DeviceResidency::grow(Block& b, size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  if (b.device && bytes <= b.bytes) return b;
  backend_->device_free(b.device);
  b = Block{backend_->device_alloc(bytes), bytes};
  return b;
}

void* DeviceResidency::slot(Kind kind, size_t index, size_t bytes) { return grow(slots_[{kind, index}], bytes).device; }

void* DeviceResidency::input(backend::Queue& queue, NodeId id, const void* host, size_t bytes, bool changed) {
  Block& b = grow(inputs_[id], bytes);
  if (changed || b.host != host || b.used != bytes) {
    backend_->copy_to_device(queue, b.device, host, bytes);
    b.host = host;
    b.used = bytes;
  }
  return b.device;
}

size_t DeviceResidency::device_bytes() const {
  size_t total = 0;
  for (const auto& [key, b] : slots_) total += b.bytes;
  for (const auto& [id, b] : inputs_) total += b.bytes;
  return total;
}

}  // namespace lumen

#include "lumen/runtime/device_residency.h"

namespace lumen {

DeviceResidency::~DeviceResidency() {
  for (auto& [key, b] : slots_) backend_->device_free(b.device);
  for (auto& [id, b] : inputs_) backend_->device_free(b.device);
}

DeviceResidency::Block& DeviceResidency::grow(Block& b, size_t bytes) {
  if (bytes <= b.bytes && b.device) return b;
  backend_->device_free(b.device);
  b.device = nullptr;
  b.bytes = 0;
  b.host = nullptr;
  b.device = backend_->device_alloc(bytes == 0 ? 1 : bytes);
  b.bytes = bytes == 0 ? 1 : bytes;
  return b;
}

void* DeviceResidency::slot(const std::string& key, size_t bytes) { return grow(slots_[key], bytes).device; }

void* DeviceResidency::input(backend::Queue& queue, NodeId id, const void* host, size_t bytes, bool changed) {
  Block& b = inputs_[id];
  bool fresh = b.device && bytes <= b.bytes;
  grow(b, bytes);
  if (changed || !fresh || b.host != host || b.used != bytes) {
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

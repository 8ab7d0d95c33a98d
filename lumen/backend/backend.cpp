#include "lumen/backend/backend.h"

#include "lumen/core/error.h"

namespace lumen::backend {

namespace {

[[noreturn]] void no_device_memory(const Backend& b, const char* what) {
  fail(b.name(), " backend: ", what, " asked of a backend that runs on host memory (Capabilities::device_memory is false)");
}

}  // namespace

void* Backend::device_alloc(size_t) const { no_device_memory(*this, "device_alloc"); }
void Backend::device_free(void*) const { no_device_memory(*this, "device_free"); }
void Backend::copy_to_device(Queue&, void*, const void*, size_t) const { no_device_memory(*this, "copy_to_device"); }
void Backend::copy_to_host(Queue&, void*, const void*, size_t) const { no_device_memory(*this, "copy_to_host"); }
std::shared_ptr<Queue> Backend::device_queue() const { no_device_memory(*this, "device_queue"); }
LaunchStatus Backend::finish(Queue&) const { return {}; }

}  // namespace lumen::backend

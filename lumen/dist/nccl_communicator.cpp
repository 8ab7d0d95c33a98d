#include "lumen/dist/nccl_communicator.h"

#include "lumen/core/error.h"

#ifdef LUMEN_HAVE_NCCL

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace lumen::dist {

namespace {

// The entry points, typed by the toolkit's own declarations.
struct Api {
  void* cudart = nullptr;
  void* nccl = nullptr;
  std::string error;
#define LUMEN_API(name) decltype(&::name) name = nullptr;
  LUMEN_API(cudaGetDeviceCount)
  LUMEN_API(cudaSetDevice)
  LUMEN_API(cudaStreamCreate)
  // cudaMalloc is overloaded in C++: pick the C entry point (the cast fails to compile if the header disagrees).
  using CudaMalloc = cudaError_t (*)(void**, size_t);
  CudaMalloc cudaMalloc = nullptr;
  static_assert(sizeof(static_cast<CudaMalloc>(&::cudaMalloc)) > 0, "cudaMalloc's C signature");
  LUMEN_API(cudaFree)
  LUMEN_API(cudaMemcpyAsync)
  LUMEN_API(cudaEventCreateWithFlags)
  LUMEN_API(cudaEventRecord)
  LUMEN_API(cudaEventQuery)
  LUMEN_API(cudaEventDestroy)
  LUMEN_API(cudaGetErrorString)
  LUMEN_API(ncclGetUniqueId)
  LUMEN_API(ncclCommInitRank)
  LUMEN_API(ncclAllReduce)
  LUMEN_API(ncclAllGather)
  LUMEN_API(ncclReduceScatter)
  LUMEN_API(ncclBroadcast)
  LUMEN_API(ncclSend)
  LUMEN_API(ncclRecv)
  LUMEN_API(ncclGetErrorString)
#undef LUMEN_API
};

void* open_first(std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
  }
  return nullptr;
}

const Api& api() {
  static Api a = [] {
    Api x;
    x.cudart = open_first({"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"});
    x.nccl = open_first({"libnccl.so.2", "libnccl.so"});
    if (!x.cudart || !x.nccl) {
      x.error = std::string(!x.cudart ? "libcudart" : "libnccl.so.2") + " was not found (LD_LIBRARY_PATH)";
      return x;
    }
    bool ok = true;
#define LUMEN_LOAD(lib, name)                                               \
  x.name = reinterpret_cast<decltype(x.name)>(dlsym(x.lib, #name));         \
  if (!x.name) {                                                            \
    ok = false;                                                             \
    x.error = std::string(#name) + " is missing from " + #lib;              \
  }
    LUMEN_LOAD(cudart, cudaGetDeviceCount)
    LUMEN_LOAD(cudart, cudaSetDevice)
    LUMEN_LOAD(cudart, cudaStreamCreate)
    LUMEN_LOAD(cudart, cudaMalloc)
    LUMEN_LOAD(cudart, cudaFree)
    LUMEN_LOAD(cudart, cudaMemcpyAsync)
    LUMEN_LOAD(cudart, cudaEventCreateWithFlags)
    LUMEN_LOAD(cudart, cudaEventRecord)
    LUMEN_LOAD(cudart, cudaEventQuery)
    LUMEN_LOAD(cudart, cudaEventDestroy)
    LUMEN_LOAD(cudart, cudaGetErrorString)
    LUMEN_LOAD(nccl, ncclGetUniqueId)
    LUMEN_LOAD(nccl, ncclCommInitRank)
    LUMEN_LOAD(nccl, ncclAllReduce)
    LUMEN_LOAD(nccl, ncclAllGather)
    LUMEN_LOAD(nccl, ncclReduceScatter)
    LUMEN_LOAD(nccl, ncclBroadcast)
    LUMEN_LOAD(nccl, ncclSend)
    LUMEN_LOAD(nccl, ncclRecv)
    LUMEN_LOAD(nccl, ncclGetErrorString)
#undef LUMEN_LOAD
    if (!ok) {
      x.cudart = x.nccl = nullptr;
    }
    return x;
  }();
  return a;
}

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail("dist: CUDA ", what, " failed: ", api().cudaGetErrorString(e));
}

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) fail("dist: NCCL ", what, " failed: ", api().ncclGetErrorString(r));
}

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::F32: return ncclFloat32;
    case DType::F16: return ncclFloat16;
    case DType::BF16: return ncclBfloat16;
    case DType::F64: return ncclFloat64;
    case DType::I32: return ncclInt32;
    case DType::I64: return ncclInt64;
    case DType::I8: return ncclInt8;
    case DType::U8: return ncclUint8;
    default: break;
  }
  fail("dist: NCCL has no type for ", dtype_name(d));
}

ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::Sum ? ncclSum : ncclMax; }

// Device staging buffers and the event that says when the host copy back is done.
class NcclRequest : public CommRequest {
 public:
  NcclRequest(cudaStream_t stream, size_t in_bytes, size_t out_bytes) {
    const Api& a = api();
    if (in_bytes) cuda_check(a.cudaMalloc(&in_, in_bytes), "cudaMalloc");
    if (out_bytes) cuda_check(a.cudaMalloc(&out_, out_bytes), "cudaMalloc");
    cuda_check(a.cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
    stream_ = stream;
  }
  ~NcclRequest() override {
    const Api& a = api();
    if (event_) a.cudaEventDestroy(event_);
    if (in_) a.cudaFree(in_);
    if (out_) a.cudaFree(out_);
  }
  void* in() const { return in_; }
  void* out() const { return out_; }
  void recorded() { cuda_check(api().cudaEventRecord(event_, stream_), "cudaEventRecord"); }

  bool wait_for(double seconds) override {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      cudaError_t e = api().cudaEventQuery(event_);
      if (e == cudaSuccess) return true;
      if (e != cudaErrorNotReady) cuda_check(e, "cudaEventQuery");
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

 private:
  void* in_ = nullptr;
  void* out_ = nullptr;
  cudaEvent_t event_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(Communicator& bootstrap, int device) : bootstrap_(bootstrap), device_(device) {
    const Api& a = api();
    cuda_check(a.cudaSetDevice(device), "cudaSetDevice");
    cuda_check(a.cudaStreamCreate(&stream_), "cudaStreamCreate");
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (bootstrap.rank() == 0) nccl_check(a.ncclGetUniqueId(&id), "ncclGetUniqueId");
    auto r = bootstrap.broadcast(&id, sizeof id, 0);
    bootstrap.wait(*r, "NCCL's unique id");
    nccl_check(a.ncclCommInitRank(&comm_, bootstrap.size(), id, bootstrap.rank()), "ncclCommInitRank");
    timeout_s = bootstrap.timeout_s;
  }
  int rank() const override { return bootstrap_.rank(); }
  int size() const override { return bootstrap_.size(); }
  const char* engine() const override { return "nccl"; }

  std::unique_ptr<CommRequest> all_reduce(void* data, int64_t count, DType dtype, ReduceOp op) override {
    size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
    auto r = std::make_unique<NcclRequest>(stream_, bytes, 0);
    to_device(r->in(), data, bytes);
    nccl_check(api().ncclAllReduce(r->in(), r->in(), static_cast<size_t>(count), nccl_type(dtype), nccl_op(op), comm_, stream_),
               "all-reduce");
    void* dev = r->in();
    return finish(std::move(r), data, dev, bytes);
  }

  std::unique_ptr<CommRequest> all_gather(const void* send, void* recv, int64_t count, DType dtype) override {
    size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
    auto r = std::make_unique<NcclRequest>(stream_, bytes, bytes * static_cast<size_t>(size()));
    to_device(r->in(), send, bytes);
    nccl_check(api().ncclAllGather(r->in(), r->out(), static_cast<size_t>(count), nccl_type(dtype), comm_, stream_), "all-gather");
    void* dev = r->out();
    return finish(std::move(r), recv, dev, bytes * static_cast<size_t>(size()));
  }

  std::unique_ptr<CommRequest> reduce_scatter(const void* send, void* recv, int64_t count, DType dtype, ReduceOp op) override {
    size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
    auto r = std::make_unique<NcclRequest>(stream_, bytes * static_cast<size_t>(size()), bytes);
    to_device(r->in(), send, bytes * static_cast<size_t>(size()));
    nccl_check(api().ncclReduceScatter(r->in(), r->out(), static_cast<size_t>(count), nccl_type(dtype), nccl_op(op), comm_,
                                       stream_),
               "reduce-scatter");
    void* dev = r->out();
    return finish(std::move(r), recv, dev, bytes);
  }

  std::unique_ptr<CommRequest> send(const void* data, int64_t bytes, int peer, int) override {
    auto r = std::make_unique<NcclRequest>(stream_, static_cast<size_t>(bytes), 0);
    to_device(r->in(), data, static_cast<size_t>(bytes));
    nccl_check(api().ncclSend(r->in(), static_cast<size_t>(bytes), ncclInt8, peer, comm_, stream_), "send");
    r->recorded();
    return r;
  }

  std::unique_ptr<CommRequest> recv(void* data, int64_t bytes, int peer, int) override {
    auto r = std::make_unique<NcclRequest>(stream_, 0, static_cast<size_t>(bytes));
    nccl_check(api().ncclRecv(r->out(), static_cast<size_t>(bytes), ncclInt8, peer, comm_, stream_), "recv");
    void* dev = r->out();
    return finish(std::move(r), data, dev, static_cast<size_t>(bytes));
  }

  std::unique_ptr<CommRequest> broadcast(void* data, int64_t bytes, int root) override {
    auto r = std::make_unique<NcclRequest>(stream_, static_cast<size_t>(bytes), 0);
    to_device(r->in(), data, static_cast<size_t>(bytes));
    nccl_check(api().ncclBroadcast(r->in(), r->in(), static_cast<size_t>(bytes), ncclInt8, root, comm_, stream_), "broadcast");
    void* dev = r->in();
    return finish(std::move(r), data, dev, static_cast<size_t>(bytes));
  }

  std::unique_ptr<Communicator> split(int color, int key) override {
    split_bootstrap_.push_back(bootstrap_.split(color, key));
    return std::make_unique<NcclCommunicator>(*split_bootstrap_.back(), device_);
  }

 private:
  void to_device(void* device, const void* host, size_t bytes) {
    if (bytes) cuda_check(api().cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_), "copy to device");
  }

  std::unique_ptr<CommRequest> finish(std::unique_ptr<NcclRequest> r, void* host, const void* device, size_t bytes) {
    if (bytes) cuda_check(api().cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_), "copy to host");
    r->recorded();
    return r;
  }

  Communicator& bootstrap_;
  int device_ = 0;
  std::vector<std::unique_ptr<Communicator>> split_bootstrap_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

bool nccl_available(std::string* why) {
  const Api& a = api();
  if (!a.nccl) {
    if (why) *why = a.error;
    return false;
  }
  int count = 0;
  cudaError_t e = a.cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why) *why = e != cudaSuccess ? std::string("no CUDA device: ") + a.cudaGetErrorString(e) : "no CUDA device";
    return false;
  }
  return true;
}

std::unique_ptr<Communicator> nccl_communicator(Communicator& bootstrap, int device) {
  std::string why;
  if (!nccl_available(&why)) fail("dist: NCCL is not usable here: ", why);
  int count = 0;
  cuda_check(api().cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (device < 0) device = bootstrap.rank() % count;
  return std::make_unique<NcclCommunicator>(bootstrap, device);
}

}  // namespace lumen::dist

#else  // built without the CUDA toolkit's NCCL headers

namespace lumen::dist {

bool nccl_available(std::string* why) {
  if (why) *why = "lumen was built without NCCL (CMake found no nccl.h / cuda_runtime_api.h)";
  return false;
}

std::unique_ptr<Communicator> nccl_communicator(Communicator&, int) {
  fail("dist: lumen was built without NCCL (CMake found no nccl.h / cuda_runtime_api.h under /usr/local/cuda*)");
}

}  // namespace lumen::dist

#endif

// CUDA C compiled with NVRTC (loaded with dlopen, so lumen builds and runs
// where no CUDA toolkit is installed): source -> PTX and cubin for one
// architecture (sm_80, sm_90, ...), with ptxas's resource report (registers,
// shared memory per kernel) parsed from the compile log. Results are cached
// on disk by architecture, NVRTC version and source hash
// (LUMEN_CACHE_DIR/cuda/<key>.{cubin,ptx,log}).
#pragma once

#include <map>
#include <string>

namespace lumen::cuda {

struct KernelResources {
  int registers = 0;
  int64_t shared_bytes = 0;  // static shared memory
  int64_t spill_bytes = 0;   // spill stores + loads
};

struct NvrtcResult {
  std::string ptx, cubin, log;
  std::map<std::string, KernelResources> resources;  // by entry name
  bool cache_hit = false;
  double seconds = 0;
  std::string path;
};

// Whether libnvrtc can be loaded; `why` says why not.
bool nvrtc_available(std::string* why = nullptr);
// "13.0": the loaded NVRTC's version.
std::string nvrtc_version();
// Compiles for `arch` ("sm_80"); a compile error raises lumen::Error with the log.
NvrtcResult nvrtc_compile(const std::string& source, const std::string& arch);
// ptxas's "Used N registers, M bytes smem" lines, by function.
std::map<std::string, KernelResources> parse_ptxas_report(const std::string& log);

}  // namespace lumen::cuda

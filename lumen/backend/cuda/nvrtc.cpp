#include "lumen/backend/cuda/nvrtc.h"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include "lumen/backend/cpu/compiler.h"
#include "lumen/backend/gpu/gpu_program.h"
#include "lumen/core/error.h"
#include "lumen/core/file_bytes.h"

namespace lumen::cuda {

namespace {

using Program = void*;
using Status = int;  // nvrtcResult; 0 is NVRTC_SUCCESS

struct Nvrtc {
  void* handle = nullptr;
  std::string error;
  const char* (*error_string)(Status) = nullptr;
  Status (*version)(int*, int*) = nullptr;
  Status (*create)(Program*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  Status (*destroy)(Program*) = nullptr;
  Status (*compile)(Program, int, const char* const*) = nullptr;
  Status (*log_size)(Program, size_t*) = nullptr;
  Status (*log)(Program, char*) = nullptr;
  Status (*ptx_size)(Program, size_t*) = nullptr;
  Status (*ptx)(Program, char*) = nullptr;
  Status (*cubin_size)(Program, size_t*) = nullptr;
  Status (*cubin)(Program, char*) = nullptr;
};

template <typename F>
void bind(Nvrtc& n, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(n.handle, name));
  if (!f && n.error.empty()) n.error = std::string("libnvrtc lacks ") + name;
}

Nvrtc open_nvrtc() {
  Nvrtc n;
  for (const char* name : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"}) {
    n.handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (n.handle) break;
  }
  if (!n.handle) {
    n.error = "libnvrtc.so was not found (install the CUDA toolkit or put its lib64 on LD_LIBRARY_PATH)";
    return n;
  }
  bind(n, n.error_string, "nvrtcGetErrorString");
  bind(n, n.version, "nvrtcVersion");
  bind(n, n.create, "nvrtcCreateProgram");
  bind(n, n.destroy, "nvrtcDestroyProgram");
  bind(n, n.compile, "nvrtcCompileProgram");
  bind(n, n.log_size, "nvrtcGetProgramLogSize");
  bind(n, n.log, "nvrtcGetProgramLog");
  bind(n, n.ptx_size, "nvrtcGetPTXSize");
  bind(n, n.ptx, "nvrtcGetPTX");
  bind(n, n.cubin_size, "nvrtcGetCUBINSize");
  bind(n, n.cubin, "nvrtcGetCUBIN");
  return n;
}

const Nvrtc& nvrtc() {
  static const Nvrtc n = open_nvrtc();
  if (!n.error.empty()) fail("cuda: ", n.error);
  return n;
}


std::string text_of(Program p, Status (*size)(Program, size_t*), Status (*get)(Program, char*)) {
  size_t n = 0;
  if (size(p, &n) != 0 || n == 0) return "";
  std::string s(n, '\0');
  if (get(p, s.data()) != 0) return "";
  while (!s.empty() && s.back() == '\0') s.pop_back();  // the size counts the terminator
  return s;
}

}  // namespace

bool nvrtc_available(std::string* why) {
  try {
    nvrtc();
    return true;
  } catch (const Error& e) {
    if (why) *why = e.what();
    return false;
  }
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtc().version(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::map<std::string, KernelResources> parse_ptxas_report(const std::string& log) {
  std::map<std::string, KernelResources> out;
  static const std::regex function(R"(Function properties for (\w+))");
  static const std::regex compiling(R"(Compiling entry function '(\w+)')");
  static const std::regex used(R"(Used (\d+) registers(?:.*?(\d+) bytes smem)?)");
  static const std::regex spill(R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
  std::string current;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, compiling) || std::regex_search(line, m, function)) current = m[1];
    if (current.empty()) continue;
    if (std::regex_search(line, m, used)) {
      out[current].registers = std::stoi(m[1]);
      if (m[2].matched) out[current].shared_bytes = std::stoll(m[2]);
    } else if (std::regex_search(line, m, spill)) {
      out[current].spill_bytes = std::stoll(m[1]) + std::stoll(m[2]);
    }
  }
  return out;
}

NvrtcResult nvrtc_compile(const std::string& source, const std::string& arch) {
  const Nvrtc& n = nvrtc();
  std::string dir = cpu::cache_dir() + "/cuda";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  NvrtcResult r;
  r.path = dir + "/" + gpu::fnv_hex(arch + "\n" + nvrtc_version() + "\n" + source);
  r.cubin = read_file_bytes(r.path + ".cubin");
  if (!r.cubin.empty()) {
    r.ptx = read_file_bytes(r.path + ".ptx");
    r.log = read_file_bytes(r.path + ".log");
    r.resources = parse_ptxas_report(r.log);
    r.cache_hit = true;
    return r;
  }
  auto start = std::chrono::steady_clock::now();
  Program p = nullptr;
  if (n.create(&p, source.c_str(), "lumen.cu", 0, nullptr, nullptr) != 0) fail("cuda: nvrtcCreateProgram failed");
  std::string arch_option = "--gpu-architecture=" + arch;
  std::vector<const char*> options = {arch_option.c_str(), "--ptxas-options=-v", "-default-device"};
  Status st = n.compile(p, static_cast<int>(options.size()), options.data());
  r.log = text_of(p, n.log_size, n.log);
  if (st != 0) {
    n.destroy(&p);
    fail("cuda: NVRTC could not compile the generated program for ", arch, " (", n.error_string(st), "):\n",
         r.log.substr(0, 4000), "\n(this is a lumen bug: LUMEN_DEBUG=kernels prints the source)");
  }
  r.ptx = text_of(p, n.ptx_size, n.ptx);
  r.cubin = text_of(p, n.cubin_size, n.cubin);
  n.destroy(&p);
  r.resources = parse_ptxas_report(r.log);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_file_atomically(r.path + ".ptx", r.ptx);
  write_file_atomically(r.path + ".log", r.log);
  write_file_atomically(r.path + ".cubin", r.cubin);  // last: its presence marks a complete entry
  return r;
}

}  // namespace lumen::cuda

#include "lumen/backend/opencl/cl_program.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "lumen/backend/cpu/compiler.h"
#include "lumen/backend/gpu/gpu_program.h"
#include "lumen/core/error.h"
#include "lumen/core/file_bytes.h"

namespace lumen::opencl {

namespace {


std::string build_log(cl_program program) {
  size_t n = 0;
  clGetProgramBuildInfo(program, cl_device().device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  std::string log(n, '\0');
  clGetProgramBuildInfo(program, cl_device().device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  if (log.size() > 4000) log = log.substr(0, 4000) + "\n...";
  return log;
}

cl_program from_binary(const std::string& binary) {
  const ClDevice& d = cl_device();
  size_t size = binary.size();
  const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
  cl_int st = CL_SUCCESS, bin_st = CL_SUCCESS;
  cl_program p = clCreateProgramWithBinary(d.context, 1, &d.device, &size, &bytes, &bin_st, &st);
  if (st != CL_SUCCESS || bin_st != CL_SUCCESS) return nullptr;
  if (clBuildProgram(p, 1, &d.device, "", nullptr, nullptr) != CL_SUCCESS) {
    clReleaseProgram(p);
    return nullptr;  // a stale or corrupt cache entry: built again from source
  }
  return p;
}

std::string binary_of(cl_program p) {
  size_t size = 0;
  clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr);
  std::string binary(size, '\0');
  unsigned char* ptr = reinterpret_cast<unsigned char*>(binary.data());
  if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) != CL_SUCCESS) return "";
  return binary;
}

}  // namespace

BuiltProgram build_program(const std::string& source, const std::string& fingerprint) {
  const ClDevice& d = cl_device();
  std::string dir = cpu::cache_dir() + "/opencl";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  BuiltProgram built;
  built.path = dir + "/" + gpu::fnv_hex(fingerprint + "\n" + source) + ".bin";
  std::string cached = read_file_bytes(built.path);
  if (!cached.empty()) {
    built.program = from_binary(cached);
    if (built.program) {
      built.cache_hit = true;
      return built;
    }
  }
  auto start = std::chrono::steady_clock::now();
  const char* text = source.c_str();
  size_t length = source.size();
  cl_int st = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(d.context, 1, &text, &length, &st);
  check(st, "clCreateProgramWithSource");
  st = clBuildProgram(p, 1, &d.device, "-cl-std=CL1.2", nullptr, nullptr);
  if (st != CL_SUCCESS) {
    std::string log = build_log(p);
    clReleaseProgram(p);
    fail("opencl: building the generated program failed on ", d.device_name, " (", cl_error_name(st), "):\n", log,
         "\n(this is a lumen bug: LUMEN_DEBUG=kernels prints the source)");
  }
  built.program = p;
  built.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string binary = binary_of(p);
  if (!binary.empty()) write_file_atomically(built.path, binary);
  return built;
}

}  // namespace lumen::opencl

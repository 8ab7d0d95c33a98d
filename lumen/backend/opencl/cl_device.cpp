#include "lumen/backend/opencl/cl_device.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "lumen/core/error.h"

namespace lumen::opencl {

const char* cl_error_name(cl_int status) {
  switch (status) {
    case CL_SUCCESS: return "CL_SUCCESS";
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_HOST_PTR: return "CL_INVALID_HOST_PTR";
    case CL_INVALID_BINARY: return "CL_INVALID_BINARY";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_ARG_INDEX: return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_VALUE: return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL platform is installed)";
    default: return "an OpenCL error";
  }
}

void check(cl_int status, const char* what) {
  if (status != CL_SUCCESS) fail("opencl: ", what, " failed with ", cl_error_name(status), " (", status, ")");
}

namespace {

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  clGetDeviceInfo(d, what, 0, nullptr, &n);
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

// (platform, device) pairs, GPUs first.
std::vector<std::pair<cl_platform_id, cl_device_id>> all_devices() {
  cl_uint np = 0;
  cl_int st = clGetPlatformIDs(0, nullptr, &np);
  if (st != CL_SUCCESS || np == 0) {
    fail("opencl: no OpenCL platform found (", cl_error_name(st), "); install a driver (e.g. pocl-opencl-icd for the CPU) "
         "or use backend \"cpu\"");
  }
  std::vector<cl_platform_id> platforms(np);
  check(clGetPlatformIDs(np, platforms.data(), nullptr), "clGetPlatformIDs");
  std::vector<std::pair<cl_platform_id, cl_device_id>> gpus, others;
  for (cl_platform_id p : platforms) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> devices(nd);
    check(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, devices.data(), nullptr), "clGetDeviceIDs");
    for (cl_device_id d : devices) {
      cl_device_type type = 0;
      clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
      ((type & CL_DEVICE_TYPE_GPU) ? gpus : others).push_back({p, d});
    }
  }
  gpus.insert(gpus.end(), others.begin(), others.end());
  return gpus;
}

ClDevice open_device() {
  auto devices = all_devices();
  if (devices.empty()) fail("opencl: the OpenCL platforms list no device; use backend \"cpu\"");
  size_t pick = 0;
  if (const char* want = std::getenv("LUMEN_OPENCL_DEVICE")) {
    pick = static_cast<size_t>(std::atoi(want));
    if (pick >= devices.size()) fail("opencl: LUMEN_OPENCL_DEVICE=", want, " but there are ", devices.size(), " devices");
  }
  ClDevice c;
  c.platform = devices[pick].first;
  c.device = devices[pick].second;
  cl_int st = CL_SUCCESS;
  c.context = clCreateContext(nullptr, 1, &c.device, nullptr, nullptr, &st);
  check(st, "clCreateContext");
  size_t n = 0;
  clGetPlatformInfo(c.platform, CL_PLATFORM_NAME, 0, nullptr, &n);
  c.platform_name.resize(n);
  clGetPlatformInfo(c.platform, CL_PLATFORM_NAME, n, c.platform_name.data(), nullptr);
  while (!c.platform_name.empty() && c.platform_name.back() == '\0') c.platform_name.pop_back();
  c.device_name = device_string(c.device, CL_DEVICE_NAME);
  c.device_version = device_string(c.device, CL_DEVICE_VERSION);
  c.driver_version = device_string(c.device, CL_DRIVER_VERSION);
  cl_uint units = 1;
  clGetDeviceInfo(c.device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr);
  c.compute_units = static_cast<int>(units);
  clGetDeviceInfo(c.device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof c.max_group_size, &c.max_group_size, nullptr);
  return c;
}

}  // namespace

const ClDevice& cl_device() {
  static const ClDevice device = open_device();
  return device;
}

}  // namespace lumen::opencl

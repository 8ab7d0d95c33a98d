// The OpenCL device lumen runs on, found through the ICD loader
// (clGetPlatformIDs): the first GPU of any platform, else the first device of
// any type (PoCL's CPU device on machines without a GPU); LUMEN_OPENCL_DEVICE
// = "<platform>:<device>" picks one by index. One context per process.
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <string>

namespace lumen::opencl {

struct ClDevice {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  std::string platform_name, device_name, device_version, driver_version;
  int compute_units = 1;
  size_t max_group_size = 1;
};

// The process's device; throws lumen::Error when there is no OpenCL device.
const ClDevice& cl_device();

// Throws lumen::Error naming `what` and the OpenCL error code unless it is CL_SUCCESS.
void check(cl_int status, const char* what);
const char* cl_error_name(cl_int status);

}  // namespace lumen::opencl

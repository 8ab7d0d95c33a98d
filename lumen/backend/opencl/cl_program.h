// OpenCL C source built into a program for the process's device, through a
// disk cache of built binaries keyed by the device fingerprint and the
// source's hash (LUMEN_CACHE_DIR/opencl/<key>.bin, written to a temporary
// file and renamed into place).
#pragma once

#include <string>

#include "lumen/backend/opencl/cl_device.h"

namespace lumen::opencl {

struct BuiltProgram {
  cl_program program = nullptr;
  bool cache_hit = false;
  double seconds = 0;
  std::string path;
};

// `fingerprint` names the device and driver; build errors raise lumen::Error with the build log.
BuiltProgram build_program(const std::string& source, const std::string& fingerprint);

}  // namespace lumen::opencl

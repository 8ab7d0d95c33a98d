// The fuzz input as a file: readers open paths and memory-map them, so each
// input is written to one in-memory file (memfd) reused across runs, and
// handed over as /proc/self/fd/N. No disk traffic, nothing left behind.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace lumen::fuzz {

// Results stored here are computed: the reads the target makes stay in.
inline volatile double sink = 0;

inline std::string as_file(const uint8_t* data, size_t size) {
  static int fd = -1;
  if (fd < 0) {
    fd = ::memfd_create("lumen_fuzz_input", MFD_CLOEXEC);
    if (fd < 0) {
      std::perror("memfd_create");
      std::abort();
    }
  }
  if (::ftruncate(fd, 0) != 0) std::abort();
  for (size_t done = 0; done < size;) {
    ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace lumen::fuzz

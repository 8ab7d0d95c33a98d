// MappedFile — a read-only memory map of a whole file. Weight files are read
// through it so tensors can borrow their bytes without copying; the mapping
// lives as long as any Array borrowing from it (hold it by shared_ptr).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace lumen::io {

class MappedFile {
 public:
  // Throws lumen::Error naming the path if it cannot be opened or mapped.
  static std::shared_ptr<const MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace lumen::io

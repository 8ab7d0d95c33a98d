// Helpers for fuzzing file readers: temp files and byte-level mutations of a
// valid file. A reader passes when every mutation either loads or raises
// lumen::Error — a crash, a hang or another exception fails the test.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace lumen::testing {

// A per-process scratch directory, removed when the test binary exits.
struct TempDir {
  std::filesystem::path path;
  TempDir() : path(std::filesystem::temp_directory_path() / ("lumen_test_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

inline std::string temp_path(const std::string& name) {
  static TempDir dir;
  return (dir.path / name).string();
}

inline std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Number of fuzz cases: small in `make test`, large under LUMEN_SLOW=1.
inline int fuzz_cases(int fast, int slow) {
  const char* s = std::getenv("LUMEN_SLOW");
  return s && std::string(s) == "1" ? slow : fast;
}

// One random mutation of `bytes`; `hot` is the length of the prefix that
// holds headers/metadata (mutated more often than the bulk data).
inline std::vector<unsigned char> mutate(std::vector<unsigned char> bytes, size_t hot, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  switch (rng() % 6) {
    case 0:  // flip a few bytes in the header region
      for (int i = 0, n = 1 + static_cast<int>(rng() % 4); i < n && !bytes.empty(); ++i) {
        bytes[pick(std::min(hot, bytes.size()))] ^= static_cast<unsigned char>(1u << (rng() % 8));
      }
      break;
    case 1:  // truncate
      bytes.resize(pick(bytes.size() + 1));
      break;
    case 2:  // overwrite 8 aligned-ish bytes in the header with a random or extreme integer
      if (bytes.size() >= 8) {
        size_t at = pick(std::min(hot, bytes.size() - 7));
        uint64_t values[] = {rng(), 0, ~0ull, 1ull << 63, 0x7fffffff, rng() % 1024};
        uint64_t v = values[rng() % 6];
        for (int i = 0; i < 8; ++i) bytes[at + static_cast<size_t>(i)] = static_cast<unsigned char>(v >> (8 * i));
      }
      break;
    case 3:  // replace a digit run with a huge or odd number (text headers)
    {
      size_t at = pick(std::min(hot, bytes.size()));
      while (at < bytes.size() && at < hot && !(bytes[at] >= '0' && bytes[at] <= '9')) ++at;
      if (at >= bytes.size() || at >= hot) break;
      size_t end = at;
      while (end < bytes.size() && bytes[end] >= '0' && bytes[end] <= '9') ++end;
      const char* subs[] = {"99999999999999999999", "-1", "1e30", "\"x\"", "18446744073709551615", "4611686018427387904"};
      std::string r = subs[rng() % 6];
      bytes.erase(bytes.begin() + static_cast<long>(at), bytes.begin() + static_cast<long>(end));
      bytes.insert(bytes.begin() + static_cast<long>(at), r.begin(), r.end());
      break;
    }
    case 4:  // delete or duplicate a span in the header
    {
      size_t at = pick(std::min(hot, bytes.size())), len = 1 + pick(16);
      len = std::min(len, bytes.size() - std::min(at, bytes.size()));
      if (rng() % 2) {
        bytes.erase(bytes.begin() + static_cast<long>(at), bytes.begin() + static_cast<long>(at + len));
      } else {
        std::vector<unsigned char> span(bytes.begin() + static_cast<long>(at), bytes.begin() + static_cast<long>(at + len));
        bytes.insert(bytes.begin() + static_cast<long>(at), span.begin(), span.end());
      }
      break;
    }
    default:  // random garbage bytes anywhere
      for (int i = 0, n = 1 + static_cast<int>(rng() % 8); i < n && !bytes.empty(); ++i) {
        bytes[pick(bytes.size())] = static_cast<unsigned char>(rng());
      }
      break;
  }
  return bytes;
}

}  // namespace lumen::testing

// The on-disk cache of compiled kernel objects survives damage: a truncated
// object, flipped code bytes, another kernel's object (with its record) in
// the entry's place, work files left by a killed search, and an unwritable
// cache directory. Each is rebuilt or worked around, never loaded.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "lumen/backend/cpu/compiler.h"

namespace lumen::cpu {
namespace {

std::string fresh_cache_dir(const std::string& name) {
  std::string dir = "/tmp/lumen-object-cache-test-" + std::to_string(getpid()) + "-" + name;
  setenv("LUMEN_CACHE_DIR", dir.c_str(), 1);
  return dir;
}

std::string kernel_returning(int value) {
  return "extern \"C\" int lumen_test_value() { return " + std::to_string(value) + "; }\n";
}

int call(const std::shared_ptr<Library>& lib) { return reinterpret_cast<int (*)()>(lib->symbol("lumen_test_value"))(); }

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

std::string record_of(const std::string& object) { return object.substr(0, object.size() - 3) + ".sum"; }

TEST(ObjectCache, SecondCompileIsAHit) {
  fresh_cache_dir("hit");
  CompileInfo first, second;
  EXPECT_EQ(call(compile_and_load(kernel_returning(1), &first)), 1);
  EXPECT_EQ(call(compile_and_load(kernel_returning(1), &second)), 1);
  EXPECT_FALSE(first.cache_hit);
  EXPECT_TRUE(second.cache_hit);
}

TEST(ObjectCache, TruncatedObjectIsRebuilt) {
  fresh_cache_dir("truncated");
  CompileInfo info;
  compile_and_load(kernel_returning(2), &info);
  std::string bytes = read_bytes(info.object_path);
  write_bytes(info.object_path, bytes.substr(0, bytes.size() / 3));
  CompileInfo again;
  EXPECT_EQ(call(compile_and_load(kernel_returning(2), &again)), 2);
  EXPECT_FALSE(again.cache_hit) << "a truncated object must be rebuilt, not loaded";
}

TEST(ObjectCache, FlippedBytesAreRebuilt) {
  fresh_cache_dir("flipped");
  CompileInfo info;
  compile_and_load(kernel_returning(3), &info);
  std::string bytes = read_bytes(info.object_path);
  for (size_t i = bytes.size() / 4; i < bytes.size() / 2; ++i) bytes[i] = static_cast<char>(~bytes[i]);
  write_bytes(info.object_path, bytes);
  CompileInfo again;
  EXPECT_EQ(call(compile_and_load(kernel_returning(3), &again)), 3);
  EXPECT_FALSE(again.cache_hit);
}

TEST(ObjectCache, AnotherKernelsObjectInItsPlaceIsRebuilt) {
  fresh_cache_dir("swapped");
  CompileInfo four, five;
  compile_and_load(kernel_returning(4), &four);
  compile_and_load(kernel_returning(5), &five);
  // Copy entry 5 (object and record) over entry 4.
  write_bytes(four.object_path, read_bytes(five.object_path));
  write_bytes(record_of(four.object_path), read_bytes(record_of(five.object_path)));
  CompileInfo again;
  EXPECT_EQ(call(compile_and_load(kernel_returning(4), &again)), 4);
  EXPECT_FALSE(again.cache_hit);
}

TEST(ObjectCache, ObjectWithoutRecordIsRebuilt) {
  fresh_cache_dir("norecord");
  CompileInfo info;
  compile_and_load(kernel_returning(6), &info);
  std::remove(record_of(info.object_path).c_str());  // as if killed between the two renames
  CompileInfo again;
  EXPECT_EQ(call(compile_and_load(kernel_returning(6), &again)), 6);
  EXPECT_FALSE(again.cache_hit);
}

TEST(ObjectCache, WorkFilesOfDeadProcessesAreSwept) {
  std::string dir = fresh_cache_dir("stale");
  mkdir(dir.c_str(), 0755);
  mkdir((dir + "/objects").c_str(), 0755);
  // pid 4999999 is above any pid_max: that process is not running.
  std::string stale = dir + "/objects/0123456789abcdef.4999999-1.0.cpp";
  std::string recent = dir + "/objects/0123456789abcdef.4999999-2.0.cpp";
  std::string mine = dir + "/objects/0123456789abcdef." + std::to_string(getpid()) + "-3.0.cpp";
  for (const std::string& f : {stale, recent, mine}) write_bytes(f, "// work file\n");
  utimbuf old{time(nullptr) - 3600, time(nullptr) - 3600};
  utime(stale.c_str(), &old);
  utime(mine.c_str(), &old);
  compile_and_load(kernel_returning(7));
  struct stat st {};
  EXPECT_NE(stat(stale.c_str(), &st), 0) << "an hour-old work file of a dead process is removed";
  EXPECT_EQ(stat(recent.c_str(), &st), 0) << "a recent one may belong to a compile in flight elsewhere";
  EXPECT_EQ(stat(mine.c_str(), &st), 0) << "this process's own files stay";
}

TEST(ObjectCache, UnwritableCacheFallsBackToATemporaryDirectory) {
  std::string file = "/tmp/lumen-object-cache-test-" + std::to_string(getpid()) + "-not-a-dir";
  write_bytes(file, "x");
  setenv("LUMEN_CACHE_DIR", (file + "/cache").c_str(), 1);  // a directory under a regular file cannot exist
  CompileInfo info;
  EXPECT_EQ(call(compile_and_load(kernel_returning(8), &info)), 8);
  EXPECT_EQ(info.object_path.rfind("/tmp/lumen-objects-", 0), 0u) << info.object_path;
}

}  // namespace
}  // namespace lumen::cpu

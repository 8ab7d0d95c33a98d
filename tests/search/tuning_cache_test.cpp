// Tests for lumen/search/tuning_cache.h: round trip, corruption, concurrency.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "lumen/search/tuning_cache.h"

namespace lumen::search {
namespace {

std::string fresh_path(const std::string& name) {
  std::string path = testing::TempDir() + "/lumen_" + name + "_" + std::to_string(getpid()) + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

TEST(TuningCache, RoundTrip) {
  std::string path = fresh_path("roundtrip");
  {
    TuningCache cache(path);
    EXPECT_FALSE(cache.lookup("k1").has_value());
    cache.store("k1", {"split(0,16) kind(1,vector)", 1.5, 3.0, "Mul_2 SumReduce_3", 0});
    cache.store("k2", {"kind(0,parallel)", 2.0, 2.0, "Exp2_1", 0});
  }
  TuningCache reopened(path);
  auto hit = reopened.lookup("k1");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->actions, "split(0,16) kind(1,vector)");
  EXPECT_DOUBLE_EQ(hit->best_ms, 1.5);
  EXPECT_DOUBLE_EQ(hit->baseline_ms, 3.0);
  EXPECT_EQ(hit->description, "Mul_2 SumReduce_3");
  EXPECT_GT(hit->created, 0);
  EXPECT_EQ(reopened.list().size(), 2u);
  EXPECT_EQ(reopened.clear(), 2);
  EXPECT_TRUE(reopened.list().empty());
  EXPECT_TRUE(reopened.warnings().empty());
}

TEST(TuningCache, CorruptOrTruncatedDatabaseIsRebuilt) {
  std::string path = fresh_path("corrupt");
  {
    TuningCache cache(path);
    cache.store("k", {"kind(0,parallel)", 1, 1, "", 0});
  }
  {  // truncate the file to a few bytes of garbage
    std::ofstream f(path, std::ios::trunc | std::ios::binary);
    f << "this is not a database";
  }
  TuningCache cache(path);
  EXPECT_FALSE(cache.lookup("k").has_value());
  ASSERT_FALSE(cache.warnings().empty());
  EXPECT_NE(cache.warnings()[0].find("moved it to"), std::string::npos) << cache.warnings()[0];
  cache.store("k", {"kind(0,parallel)", 1, 1, "", 0});  // and it works again
  EXPECT_TRUE(cache.lookup("k").has_value());
}

TEST(TuningCache, TwoProcessesWritingAtOnce) {
  std::string path = fresh_path("concurrent");
  { TuningCache init(path); }
  constexpr int kWrites = 200;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    TuningCache cache(path);
    for (int i = 0; i < kWrites; ++i) cache.store("child" + std::to_string(i), {"kind(0,parallel)", 1, 1, "", 0});
    _exit(cache.warnings().empty() ? 0 : 1);
  }
  TuningCache cache(path);
  for (int i = 0; i < kWrites; ++i) cache.store("parent" + std::to_string(i), {"kind(0,parallel)", 1, 1, "", 0});
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child process met cache errors";
  EXPECT_TRUE(cache.warnings().empty());
  EXPECT_EQ(cache.list().size(), 2u * kWrites);
}

}  // namespace
}  // namespace lumen::search

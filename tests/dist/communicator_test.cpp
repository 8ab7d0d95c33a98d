// The MPI communicator under mpirun (2 ranks): every collective's result, a
// transfer, groups from split(); a wait that cannot finish is a clear Error
// after the timeout. The NCCL communicator is compiled here (against the CUDA
// toolkit's headers) and runs only where a GPU exists.
#include <gtest/gtest.h>

#include <numeric>

#include "lumen/core/error.h"
#include "lumen/dist/communicator.h"
#include "lumen/dist/nccl_communicator.h"

using namespace lumen;
using namespace lumen::dist;

TEST(MpiCommunicator, AllReduceSumsAndMaxes) {
  Communicator& w = world();
  ASSERT_EQ(w.size(), 2);
  int r = w.rank();
  std::vector<float> f{1.5f * static_cast<float>(r + 1), -2.0f, static_cast<float>(r)};
  w.wait(*w.all_reduce(f.data(), 3, DType::F32, ReduceOp::Sum), "sum");
  EXPECT_EQ(f, (std::vector<float>{4.5f, -4.0f, 1.0f}));
  std::vector<int64_t> i{int64_t{1} << 40 | r, -r};
  w.wait(*w.all_reduce(i.data(), 2, DType::I64, ReduceOp::Max), "max");
  EXPECT_EQ(i, (std::vector<int64_t>{int64_t{1} << 40 | 1, 0}));
  EXPECT_THROW(w.all_reduce(f.data(), 1, DType::Bool, ReduceOp::Sum), Error);
}

TEST(MpiCommunicator, GatherScatterBroadcastTransfer) {
  Communicator& w = world();
  int r = w.rank();
  std::vector<int32_t> mine{r * 10, r * 10 + 1, r * 10 + 2}, all(6);
  w.wait(*w.all_gather(mine.data(), all.data(), 3, DType::I32), "gather");
  EXPECT_EQ(all, (std::vector<int32_t>{0, 1, 2, 10, 11, 12}));
  std::vector<double> blocks{1.0 + r, 2.0 + r, 3.0 + r, 4.0 + r}, got(2);
  w.wait(*w.reduce_scatter(blocks.data(), got.data(), 2, DType::F64, ReduceOp::Sum), "reduce-scatter");
  EXPECT_EQ(got, r == 0 ? (std::vector<double>{3, 5}) : (std::vector<double>{7, 9}));
  std::vector<char> text(6, 0);
  if (r == 1) std::copy_n("hello", 6, text.data());
  w.wait(*w.broadcast(text.data(), 6, 1), "broadcast");
  EXPECT_STREQ(text.data(), "hello");
  int64_t out = 100 + r, in = -1;
  auto s = w.send(&out, 8, 1 - r, 7);
  auto q = w.recv(&in, 8, 1 - r, 7);
  w.wait(*q, "recv");
  w.wait(*s, "send");
  EXPECT_EQ(in, 101 - r);
  w.barrier("barrier");
}

TEST(MpiCommunicator, SplitMakesGroups) {
  Communicator& w = world();
  auto alone = w.split(w.rank(), 0);
  EXPECT_EQ(alone->size(), 1);
  EXPECT_EQ(alone->rank(), 0);
  float x = 3;
  alone->wait(*alone->all_reduce(&x, 1, DType::F32, ReduceOp::Sum), "sum within one rank");
  EXPECT_EQ(x, 3);
  auto both = w.split(0, 1 - w.rank());  // reversed order
  EXPECT_EQ(both->rank(), 1 - w.rank());
}

TEST(MpiCommunicator, AWaitThatCannotFinishTimesOutWithAClearError) {
  Communicator& w = world();
  auto alone = w.split(w.rank(), 0);  // a receive nobody sends to
  int64_t v = 0;
  auto r = alone->recv(&v, 8, 0, 99);
  double saved = alone->timeout_s;
  alone->timeout_s = 0.2;
  try {
    alone->wait(*r, "a message that never comes");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("waited 0.2 s for a message that never comes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("a peer rank died, hangs"), std::string::npos) << e.what();
  }
  alone->timeout_s = saved;
  // (the job is now marked failed and ends with MPI_Abort: this test runs in its own process, last)
}

TEST(NcclCommunicator, CompiledAgainstTheToolkitAndRunsWhereAGpuIs) {
  std::string why;
  if (!nccl_available(&why)) {
    EXPECT_EQ(why.find("built without NCCL"), std::string::npos) << "the NCCL communicator was not compiled: " << why;
    EXPECT_THROW(nccl_communicator(world()), Error);
    GTEST_SKIP() << "no GPU here: " << why;
  }
  auto nccl = nccl_communicator(world());
  std::vector<float> f{1.0f + static_cast<float>(nccl->rank()), 2.0f};
  nccl->wait(*nccl->all_reduce(f.data(), 2, DType::F32, ReduceOp::Sum), "nccl sum");
  EXPECT_EQ(f, (std::vector<float>{3.0f, 4.0f}));
}

// A 2-rank tensor-parallel generation in which rank 1 fails at step 5:
// `kill` (SIGKILL: the process is gone) or `hang` (it stops answering).
// tests/dist/fault_test.py runs it under mpirun and checks that rank 0 ends
// with a clear error within 10 s.
#include <csignal>
#include <cstdio>
#include <thread>

#include "dist_test_util.h"
#include "lumen/core/error.h"
#include "lumen/dist/dist_llama_runner.h"

using namespace lumen;

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "kill";
  try {
    models::LlamaConfig c = models::LlamaConfig::from_json(
        R"({"model_type": "llama", "vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
            "intermediate_size": 32, "max_position_embeddings": 256})");
    dist::DistLlamaRunner runner(c, dist::test_util::random_llama_weights(c, 1));
    int rank = dist::world().rank();
    std::vector<float> logits = runner.forward({1, 2, 3, 4});
    for (int step = 0; step < 200; ++step) {
      std::printf("rank %d step %d\n", rank, step);
      std::fflush(stdout);
      if (rank == 1 && step == 5) {
        std::printf("rank 1 %s\n", mode == "kill" ? "dying" : "hanging");
        std::fflush(stdout);
        if (mode == "kill") std::raise(SIGKILL);
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      }
      logits = runner.forward({models::argmax(logits)});
    }
    std::printf("rank %d finished without noticing\n", rank);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "lumen: %s\n", e.what());
    dist::abort_job(1);
  }
  return 1;
}

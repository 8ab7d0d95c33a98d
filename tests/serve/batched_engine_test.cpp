// BatchedEngine on a random tiny Llama: requests of different lengths
// joining and leaving at different steps get, token for token, what
// SequentialEngine gives each alone (greedy), in batches of several rows,
// with prompts prefilled in chunks, through preemption when the block pool
// is short; cancellation, refusals and shutdown; no block leaks.
#include "lumen/serve/batched_engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "lumen/core/error.h"
#include "lumen/models/llama_runner.h"
#include "lumen/serve/sequential_engine.h"
#include "tests/serve/tiny_models.h"

namespace lumen::serve {
namespace {

using testing::greedy;
using testing::Result;

constexpr int64_t kContext = 96;

models::LlamaConfig tiny_config() {
  return models::LlamaConfig::from_json(R"({"model_type": "llama", "vocab_size": 64, "hidden_size": 32,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 48,
      "max_position_embeddings": 96, "eos_token_id": 58})");
}

std::vector<int32_t> prompt_of(size_t length, int32_t salt) {
  std::vector<int32_t> p;
  for (size_t i = 0; i < length; ++i) p.push_back(static_cast<int32_t>((i * 7 + static_cast<size_t>(salt) * 13 + 1) % 64));
  return p;
}

struct Job {
  std::vector<int32_t> prompt;
  RequestParams params;
};

// Prompts of 1 to 40 tokens (40 needs three 16-token prefill chunks) ending
// every way a request ends: max_tokens, the context limit (0), the eos token
// (3: 58 comes 22nd), a stop token (4: 40 comes 8th), a stop string (5).
std::vector<Job> jobs() {
  std::vector<Job> out{{prompt_of(5, 1), greedy(500)}, {prompt_of(1, 2), greedy(12)}, {prompt_of(23, 3), greedy(25)},
                       {prompt_of(40, 4), greedy(500)}, {prompt_of(9, 5), greedy(20)}, {prompt_of(17, 6), greedy(18)}};
  out[4].params.stop_tokens = {40, 63};
  out[5].params.stop = {"tet"};
  return out;
}

struct Answer {
  std::vector<int32_t> tokens;
  std::string text;
  Outcome outcome;
};

class BatchedEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    config_ = new models::LlamaConfig(tiny_config());
    auto weights = testing::llama_weights(*config_, 11);
    models::LlamaRunnerOptions ro;
    ro.capacity = kContext;
    ro.compile.tuning_cache = false;
    runner_ = new models::LlamaRunner(*config_, weights, ro);
    PagedLlamaOptions po;
    po.block_size = 4;
    po.blocks = 200;
    po.context = kContext;
    po.compile.tuning_cache = false;
    paged_ = new PagedLlama(*config_, weights, po);
    po.blocks = 40;  // 160 positions for three sequences of up to 96: preemption
    small_ = new PagedLlama(*config_, weights, po);
  }
  static void TearDownTestSuite() {
    delete small_;
    delete paged_;
    delete runner_;
    delete config_;
  }

  // Each job alone through SequentialEngine.
  std::vector<Answer> sequential(const std::vector<Job>& js) {
    SequentialEngine engine(*runner_, tokenizer_);
    std::vector<Answer> out;
    for (const Job& j : js) {
      Result r;
      engine.submit(j.prompt, j.params, r.on_text(), r.on_done());
      Outcome o = r.wait();
      out.push_back({r.tokens, r.text, o});
    }
    return out;
  }

  static models::LlamaConfig* config_;
  static models::LlamaRunner* runner_;
  static PagedLlama* paged_;
  static PagedLlama* small_;
  testing::LetterTokenizer tokenizer_;
};
models::LlamaConfig* BatchedEngineTest::config_ = nullptr;
models::LlamaRunner* BatchedEngineTest::runner_ = nullptr;
PagedLlama* BatchedEngineTest::paged_ = nullptr;
PagedLlama* BatchedEngineTest::small_ = nullptr;

void expect_same(const std::vector<Answer>& want, std::vector<Result>& got) {
  for (size_t i = 0; i < want.size(); ++i) {
    Outcome o = got[i].wait();
    EXPECT_EQ(got[i].tokens, want[i].tokens) << "request " << i;
    EXPECT_EQ(got[i].text, want[i].text) << "request " << i;
    EXPECT_EQ(o.reason, want[i].outcome.reason) << "request " << i;
    EXPECT_EQ(o.completion_tokens, want[i].outcome.completion_tokens) << "request " << i;
    EXPECT_EQ(o.prompt_tokens, want[i].outcome.prompt_tokens) << "request " << i;
  }
}

TEST_F(BatchedEngineTest, EqualsTheSequentialEngineTokenForToken) {
  std::vector<Job> js = jobs();
  std::vector<Answer> want = sequential(js);
  // The scenario covers what it says (the weights are seeded; a change in the model shows here first).
  EXPECT_EQ(want[0].outcome.reason, FinishReason::Length);  // the context ends it
  EXPECT_EQ(want[0].outcome.prompt_tokens + want[0].outcome.completion_tokens, kContext + 1);
  EXPECT_EQ(want[1].outcome.completion_tokens, 12);
  EXPECT_EQ(want[3].outcome.reason, FinishReason::Stop);  // eos
  EXPECT_EQ(want[3].tokens.back(), 58);
  EXPECT_EQ(want[4].outcome.reason, FinishReason::Stop);  // stop token, not in the text
  EXPECT_EQ(want[4].outcome.completion_tokens, 8);
  EXPECT_EQ(want[4].tokens.size(), 7u);
  EXPECT_EQ(want[5].outcome.reason, FinishReason::Stop);  // stop string, cut out
  EXPECT_LT(want[5].outcome.completion_tokens, 18);
  EXPECT_EQ(want[5].text.find("tet"), std::string::npos);
  BatchedEngineOptions o;
  o.max_batch = 4;  // the fifth and sixth join when others leave
  o.prefill_tokens = 16;
  BatchedEngine engine(*paged_, tokenizer_, o);
  std::vector<Result> got(js.size());
  auto submit = [&](size_t i) { engine.submit(js[i].prompt, js[i].params, got[i].on_text(), got[i].on_done()); };
  submit(0);
  submit(1);
  got[0].wait_tokens(4);  // the others join while these decode
  submit(2);
  got[1].wait_tokens(3);
  submit(3);
  submit(4);
  got[2].wait_tokens(2);
  submit(5);
  expect_same(want, got);
  EngineMetrics m = engine.metrics();
  EXPECT_EQ(m.requests_finished, static_cast<int64_t>(js.size()));
  EXPECT_GT(m.decode_rows, m.decode_steps + 10);  // steps ran several sequences at once
  EXPECT_EQ(m.kv_blocks_in_use, 0);
  EXPECT_EQ(m.kv_blocks_total, 200);
  EXPECT_EQ(m.running, 0);
}

TEST_F(BatchedEngineTest, PreemptsWhenBlocksRunOutAndStillAgrees) {
  std::vector<Job> js{{prompt_of(30, 7), greedy(60)}, {prompt_of(20, 8), greedy(70)}, {prompt_of(25, 9), greedy(60)}};
  std::vector<Answer> want = sequential(js);
  BatchedEngine engine(*small_, tokenizer_, {});
  std::vector<Result> got(js.size());
  for (size_t i = 0; i < js.size(); ++i) engine.submit(js[i].prompt, js[i].params, got[i].on_text(), got[i].on_done());
  expect_same(want, got);
  EngineMetrics m = engine.metrics();
  EXPECT_GT(m.preemptions, 0);
  EXPECT_EQ(m.kv_blocks_in_use, 0);
}

TEST_F(BatchedEngineTest, CancelsARunningRequestAndKeepsServingTheOthers) {
  BatchedEngine engine(*paged_, tokenizer_, {});
  Result doomed, kept;
  std::atomic<Engine::RequestId> doomed_id{0};
  std::atomic<int> pieces{0};
  Engine::OnText cancel_at_third = [&](int32_t, const std::string&) {
    if (++pieces == 3) engine.cancel(doomed_id);  // from the engine's thread: takes effect before its next token
  };
  doomed_id = engine.submit(prompt_of(8, 1), greedy(80), cancel_at_third, doomed.on_done());
  engine.submit(prompt_of(4, 2), greedy(40), kept.on_text(), kept.on_done());
  Outcome o = doomed.wait();
  EXPECT_EQ(o.reason, FinishReason::Cancelled);
  EXPECT_EQ(o.completion_tokens, 3);
  Engine::RequestId id = doomed_id;
  Outcome k = kept.wait();
  EXPECT_NE(k.reason, FinishReason::Cancelled);
  EXPECT_NE(k.reason, FinishReason::Error);
  engine.cancel(id);     // finished: ignored
  engine.cancel(98765);  // unknown: ignored
  EngineMetrics m = engine.metrics();
  EXPECT_EQ(m.requests_cancelled, 1);
  EXPECT_EQ(m.kv_blocks_in_use, 0);
}

TEST_F(BatchedEngineTest, RefusesRequestsThatCanNeverRunAndShutsDown) {
  BatchedEngine engine(*paged_, tokenizer_, {});
  auto refusal = [&](std::vector<int32_t> prompt, RequestParams p) -> std::string {
    try {
      engine.submit(std::move(prompt), p, {}, {});
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(refusal({}, greedy(3)).find("empty"), std::string::npos);
  EXPECT_NE(refusal(std::vector<int32_t>(kContext, 1), greedy(3)).find("context holds 96"), std::string::npos);
  EXPECT_NE(refusal({1, 64}, greedy(3)).find("outside the vocabulary"), std::string::npos);
  RequestParams p = greedy(3);
  p.sampling.top_p = 0;
  EXPECT_NE(refusal({1}, p).find("top_p"), std::string::npos);
  Result running;
  std::promise<void> release, started;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> first{true};
  engine.submit(prompt_of(3, 1), greedy(50), [&](int32_t, const std::string&) {
    if (first.exchange(false)) {
      started.set_value();
      released.wait();  // holds the worker inside the first token while shutdown() begins
    }
  }, running.on_done());
  started.get_future().wait();
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    release.set_value();
  });
  engine.shutdown();  // the running request ends as cancelled after its current token
  releaser.join();
  Outcome o = running.wait();
  EXPECT_EQ(o.reason, FinishReason::Cancelled);
  EXPECT_EQ(o.completion_tokens, 1);
  EXPECT_NE(refusal({1}, greedy(3)).find("shutting down"), std::string::npos);
  EXPECT_EQ(engine.metrics().kv_blocks_in_use, 0);
}

TEST(BatchedEngineOptionsTest, BadOptionsAreRefused) {
  models::LlamaConfig c = tiny_config();
  PagedLlamaOptions po;
  po.block_size = 0;
  EXPECT_THROW(PagedLlama(c, testing::llama_weights(c, 0), po), Error);
}

}  // namespace
}  // namespace lumen::serve

// SequentialEngine on a tiny all-zero Llama (every logit 0, so greedy always
// picks token 0, whose text is "a"): pieces, stops, queueing, cancellation,
// refusals and shutdown.
#include "lumen/serve/sequential_engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>

#include "lumen/core/error.h"
#include "lumen/models/llama.h"

namespace lumen::serve {
namespace {

class LetterTokenizer : public io::Tokenizer {
 public:
  std::vector<int32_t> encode(const std::string&, bool, bool) const override { return {}; }
  std::string decode(const std::vector<int32_t>& ids, bool) const override {
    std::string s;
    for (int32_t id : ids) s += static_cast<char>('a' + id % 26);
    return s;
  }
  std::string decode_strict(const std::vector<int32_t>& ids, bool skip) const override { return decode(ids, skip); }
  int64_t vocab_size() const override { return 32; }
  std::optional<int32_t> token_to_id(const std::string&) const override { return std::nullopt; }
  std::string id_to_token(int32_t id) const override { return std::string(1, static_cast<char>('a' + id % 26)); }
  void set_max_length(std::optional<int64_t>) override {}
};

std::unique_ptr<models::LlamaRunner> zero_llama() {
  models::LlamaConfig c = models::LlamaConfig::from_json(
      R"({"model_type": "llama", "vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 4,
          "num_key_value_heads": 2, "intermediate_size": 24, "max_position_embeddings": 32, "eos_token_id": 5})");
  auto store = std::make_shared<io::WeightStore>();
  Graph probe;
  models::Llama model(probe, c);
  for (NodeId id : probe.input_ids()) {
    const Node& n = probe.node(id);
    std::vector<int64_t> shape;
    for (const Expr& d : n.shape) shape.push_back(d.value());
    store->add(n.name, {io::WeightFormat::Plain, shape, Array(DType::F32, shape), {}, {}, n.name});
  }
  models::LlamaRunnerOptions o;
  o.compile.tuning_cache = false;
  return std::make_unique<models::LlamaRunner>(c, store, o);
}

// A submission's text and outcome, waited for.
struct Result {
  std::mutex mutex;
  std::condition_variable cv;
  std::string text;
  std::optional<Outcome> outcome;
  Engine::OnText on_text() {
    return [this](int32_t, const std::string& piece) {
      std::lock_guard<std::mutex> lock(mutex);
      text += piece;
    };
  }
  Engine::OnDone on_done() {
    return [this](const Outcome& o) {
      std::lock_guard<std::mutex> lock(mutex);
      outcome = o;
      cv.notify_all();
    };
  }
  Outcome wait() {
    std::unique_lock<std::mutex> lock(mutex);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return outcome.has_value(); }));
    return outcome.value_or(Outcome{FinishReason::Error, 0, 0, "timed out"});
  }
};

class SequentialEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { runner_ = zero_llama().release(); }
  static void TearDownTestSuite() { delete runner_; }
  static models::LlamaRunner* runner_;
  LetterTokenizer tokenizer_;
};
models::LlamaRunner* SequentialEngineTest::runner_ = nullptr;

RequestParams greedy(int64_t max_tokens) {
  RequestParams p;
  p.max_tokens = max_tokens;
  return p;
}

TEST_F(SequentialEngineTest, GeneratesPiecesAndStops) {
  SequentialEngine engine(*runner_, tokenizer_);
  Result plain, stop_string, stop_token;
  engine.submit({1, 2, 3}, greedy(5), plain.on_text(), plain.on_done());
  RequestParams p = greedy(5);
  p.stop = {"aaa"};
  engine.submit({1, 2, 3}, p, stop_string.on_text(), stop_string.on_done());
  p = greedy(5);
  p.stop_tokens = {0};
  engine.submit({1, 2, 3}, p, stop_token.on_text(), stop_token.on_done());
  Outcome o = plain.wait();
  EXPECT_EQ(plain.text, "aaaaa");
  EXPECT_EQ(o.reason, FinishReason::Length);
  EXPECT_EQ(o.prompt_tokens, 3);
  EXPECT_EQ(o.completion_tokens, 5);
  o = stop_string.wait();
  EXPECT_EQ(stop_string.text, "");
  EXPECT_EQ(o.reason, FinishReason::Stop);
  EXPECT_EQ(o.completion_tokens, 3);
  o = stop_token.wait();
  EXPECT_EQ(o.reason, FinishReason::Stop);
  EXPECT_EQ(o.completion_tokens, 1);
  EngineMetrics m = engine.metrics();
  EXPECT_EQ(m.requests_finished, 3);
  EXPECT_EQ(m.generated_tokens, 9);
  EXPECT_EQ(m.prompt_tokens, 9);
  EXPECT_EQ(m.queued, 0);
}

TEST_F(SequentialEngineTest, LongGenerationStopsAtTheContext) {
  SequentialEngine engine(*runner_, tokenizer_);
  Result r;
  engine.submit({1, 2, 3}, greedy(1000), r.on_text(), r.on_done());
  Outcome o = r.wait();
  EXPECT_EQ(o.reason, FinishReason::Length);
  EXPECT_LE(o.prompt_tokens + o.completion_tokens, engine.context_length() + 1);
  EXPECT_GE(o.completion_tokens, 20);
}

TEST_F(SequentialEngineTest, CancelsRunningAndQueuedRequests) {
  SequentialEngine engine(*runner_, tokenizer_);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<Engine::RequestId> first_id;
  std::shared_future<Engine::RequestId> first = first_id.get_future().share();
  Result running, queued;
  Engine::RequestId a = engine.submit({1, 2}, greedy(20), [&](int32_t, const std::string&) {
    released.wait();                  // hold the worker inside the first token
    engine.cancel(first.get());       // cancelled from inside: takes effect before the next token
  }, running.on_done());
  first_id.set_value(a);
  Engine::RequestId b = engine.submit({1, 2}, greedy(20), queued.on_text(), queued.on_done());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (engine.metrics().kv_positions_in_use == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EngineMetrics m = engine.metrics();
  EXPECT_EQ(m.queued, 1);
  EXPECT_EQ(m.running, 1);
  EXPECT_EQ(m.kv_positions_in_use, 3);  // the prompt and the first token, held inside its callback
  EXPECT_EQ(m.kv_positions_total, 32);
  engine.cancel(b);  // still queued: finished at once, nothing generated
  Outcome ob = queued.wait();
  EXPECT_EQ(ob.reason, FinishReason::Cancelled);
  EXPECT_EQ(ob.completion_tokens, 0);
  EXPECT_EQ(queued.text, "");
  release.set_value();
  Outcome oa = running.wait();
  EXPECT_EQ(oa.reason, FinishReason::Cancelled);
  EXPECT_LE(oa.completion_tokens, 2);
  engine.cancel(12345);  // unknown: ignored
  EXPECT_EQ(engine.metrics().requests_cancelled, 2);
}

TEST_F(SequentialEngineTest, RefusesRequestsThatCanNeverRun) {
  SequentialEngine engine(*runner_, tokenizer_);
  auto refusal = [&](std::vector<int32_t> prompt, RequestParams p) -> std::string {
    try {
      engine.submit(std::move(prompt), p, {}, {});
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(refusal({}, greedy(3)).find("empty"), std::string::npos);
  EXPECT_NE(refusal(std::vector<int32_t>(32, 1), greedy(3)).find("context holds 32"), std::string::npos);
  EXPECT_NE(refusal({1, 40}, greedy(3)).find("outside the vocabulary"), std::string::npos);
  EXPECT_NE(refusal({1}, greedy(0)).find("max_tokens"), std::string::npos);
  RequestParams hot = greedy(3);
  hot.sampling.temperature = -1;
  EXPECT_NE(refusal({1}, hot).find("temperature"), std::string::npos);
  engine.shutdown();
  EXPECT_NE(refusal({1}, greedy(3)).find("shutting down"), std::string::npos);
}

TEST_F(SequentialEngineTest, ShutdownCancelsWhatIsQueued) {
  Result a, b;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  {
    SequentialEngine engine(*runner_, tokenizer_);
    engine.submit({1}, greedy(3), [&](int32_t, const std::string&) { released.wait(); }, a.on_done());
    engine.submit({1}, greedy(3), b.on_text(), b.on_done());
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (engine.metrics().running == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::thread releaser([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      release.set_value();
    });
    engine.shutdown();  // cancels b at once, a after its current token
    releaser.join();
  }
  EXPECT_EQ(a.wait().reason, FinishReason::Cancelled);
  EXPECT_EQ(b.wait().reason, FinishReason::Cancelled);
}

}  // namespace
}  // namespace lumen::serve

// The whole ring in one process (a head and three shards over loopback TCP)
// against the single-process engine: the same token ids, greedy and seeded;
// CACHE_FULL for a job that does not fit while others go on; cache memory
// back at zero afterwards; malformed input answered with an error; the
// head's embedding runs a lone session's next steps on the sampler's thread.
#include <gtest/gtest.h>

#include <cstdlib>
#include <future>
#include <thread>

#include "messages/envelope_codec.h"
#include "pipeline/model/engine.h"
#include "pipeline/text/prompt.h"
#include "tests/actors/local_ring.h"
#include "transport/link.h"

namespace troupe::actors {
namespace {

using testing::LocalRing;
using testing::LocalRingOptions;

std::vector<int32_t> EngineIds(Engine& engine, const std::string& prompt, const SamplingParams& params) {
  PromptRequest req;
  req.prompt = prompt;
  auto ids = PromptTokens(engine.tokenizer(), engine.source().tokenizer_spec(), req);
  EXPECT_TRUE(ids.ok());
  std::vector<int32_t> out;
  auto stats = engine.Generate(ids.value(), params, [&](const TokenEvent& ev) { out.push_back(ev.id); });
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  return out;
}

class RingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ModelOptions options;
    options.threads = 1;
    auto engine = Engine::Load(testing::DefaultModel(), options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine.value()).release();
    LocalRingOptions o;
    o.cache_budget_bytes = uint64_t{24} << 20;  // 10 layers: 7.7 KB per position -> ~3200 positions
    if (const char* b = std::getenv("TROUPE_TEST_MAX_BATCH_SESSIONS")) o.max_batch_sessions = std::atoi(b);
    auto ring = LocalRing::Start(o);
    ASSERT_TRUE(ring.ok()) << ring.status().ToString();
    ring_ = std::move(ring.value()).release();
  }
  static void TearDownTestSuite() {
    delete ring_;
    delete engine_;
  }
  static double CacheBytesInUse() {
    auto client = ring_->Client();
    EXPECT_TRUE(client.ok());
    auto m = (*client)->Metrics();
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    double total = 0;
    int shards = 0;
    for (const auto& [k, v] : m->gauges()) {
      if (k.size() > 19 && k.compare(k.size() - 19, 19, "/cache_bytes_in_use") == 0) {
        total += v;
        ++shards;
      }
    }
    EXPECT_EQ(shards, 4);  // head + 3 shards
    return total;
  }
  // A counter of one node (the key "<node>/<name>" in the head's metrics).
  static int64_t Counter(const std::string& node, const std::string& name) {
    auto client = ring_->Client();
    EXPECT_TRUE(client.ok());
    auto m = (*client)->Metrics();
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    auto it = m->counters().find(node + "/" + name);
    EXPECT_TRUE(it != m->counters().end()) << node << "/" << name;
    return it == m->counters().end() ? -1 : static_cast<int64_t>(it->second);
  }
  static Engine* engine_;
  static LocalRing* ring_;
};

Engine* RingTest::engine_ = nullptr;
LocalRing* RingTest::ring_ = nullptr;

TEST_F(RingTest, GreedyEqualsEngine) {
  SamplingParams p;
  p.max_tokens = 24;
  for (const std::string prompt : {"The capital of France is", "def fibonacci(n):", "Once upon a time"}) {
    auto ring = ring_->Run(prompt, p);
    ASSERT_TRUE(ring.ok()) << ring.status().ToString();
    EXPECT_EQ(*ring, EngineIds(*engine_, prompt, p)) << prompt;
  }
}

// The scheduler hands the head's embedding the session's prompt, the
// sampler each next step (one per sampled token but the last). A lone
// session's steps are embedded and sent on the sending actor's own thread
// (the embedding's InlineStage): the embedding actor has nothing else to do
// then, so it never holds its lock, and every one of the 1 + 11 is.
TEST_F(RingTest, ALoneSessionsNextStepsAreEmbeddedOnTheSamplersThread) {
  SamplingParams p;
  p.max_tokens = 12;
  p.min_tokens = 12;
  const int64_t before = Counter("head", "inline_steps_total");
  auto ring = ring_->Run("Tell me about the moon.", p);
  ASSERT_TRUE(ring.ok()) << ring.status().ToString();
  EXPECT_EQ(*ring, EngineIds(*engine_, "Tell me about the moon.", p));
  ASSERT_EQ(ring->size(), 12u);
  EXPECT_EQ(Counter("head", "inline_steps_total") - before, 12);
}

TEST_F(RingTest, SeededSamplingEqualsEngine) {
  SamplingParams p;
  p.max_tokens = 24;
  p.temperature = 0.8f;
  p.seed = 1234;
  const std::string prompt = "Write a short poem about the sea.";
  auto ring = ring_->Run(prompt, p);
  ASSERT_TRUE(ring.ok()) << ring.status().ToString();
  EXPECT_EQ(*ring, EngineIds(*engine_, prompt, p));
}

TEST_F(RingTest, FinishCarriesCounts) {
  SamplingParams p;
  p.max_tokens = 8;
  p.min_tokens = 8;
  v1::Finish f;
  auto ring = ring_->Run("Hello", p, &f);
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(f.generated_tokens(), 8u);
  EXPECT_EQ(f.decode_steps(), 7u);
  EXPECT_EQ(f.reason(), v1::FINISH_LENGTH);
  EXPECT_GT(f.prompt_tokens(), 0u);
}

TEST_F(RingTest, CacheFullFailsOnlyThatJob) {
  SamplingParams big;
  big.max_tokens = 8000;  // 8000 positions x 7.7 KB > 24 MB on every shard
  SamplingParams small;
  small.max_tokens = 16;
  auto other = std::async(std::launch::async, [&] { return ring_->Run("Count to ten:", small); });
  auto full = ring_->Run("Tell me everything.", big);
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.status().message().find("CACHE_FULL"), std::string::npos) << full.status().ToString();
  auto ok = other.get();
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, EngineIds(*engine_, "Count to ten:", small));
}

TEST_F(RingTest, CacheMemoryReturnsToZero) {
  SamplingParams p;
  p.max_tokens = 4;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(ring_->Run("Hi number " + std::to_string(i), p).ok());
  // Closes travel after Finish: give them a moment.
  double in_use = -1;
  for (int i = 0; i < 250 && in_use != 0; ++i) {
    in_use = CacheBytesInUse();
    if (in_use != 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(in_use, 0);
}

TEST_F(RingTest, ConcurrentJobsEqualEngine) {
  const std::vector<std::string> prompts = {"The sky is", "List three fruits:", "2 + 2 =", "Hello, my name is"};
  SamplingParams p;
  p.max_tokens = 16;
  std::vector<std::future<Result<std::vector<int32_t>>>> runs;
  runs.reserve(prompts.size());
  for (const std::string& prompt : prompts) {
    runs.push_back(std::async(std::launch::async, [&, prompt] { return ring_->Run(prompt, p); }));
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto r = runs[i].get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, EngineIds(*engine_, prompts[i], p)) << prompts[i];
  }
}

TEST_F(RingTest, MalformedJobIsAnsweredAndTheNodeKeepsServing) {
  zmq::context_t context(1);
  transport::LinkOptions link;
  link.monitor = false;
  auto conn = transport::Connection::Connect(context, ring_->job_endpoint(), "garbage-client",
                                             transport::PlainSecurity(), "", link);
  ASSERT_TRUE(conn.ok());
  transport::Frames frames;
  frames.push_back(transport::CopyFrame(std::string("\xff\xff not an envelope")));
  ASSERT_TRUE((*conn)->Send(frames).ok());
  auto answer = (*conn)->Receive(5000);
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  auto env = DecodeEnvelope((*answer)[0].data(), (*answer)[0].size(), 1 << 20);
  ASSERT_TRUE(env.ok());
  ASSERT_TRUE(env->has_error());
  EXPECT_EQ(env->error().code(), v1::BAD_HEADER);
  conn->reset();
  SamplingParams p;
  p.max_tokens = 4;
  EXPECT_TRUE(ring_->Run("Still there?", p).ok());
}

}  // namespace
}  // namespace troupe::actors

namespace troupe::actors {
namespace {

// One process, one node, every stage: steps go from actor to actor without
// touching a socket, and the answer is still the engine's.
TEST(SingleNodeTest, HeadAndShardInOneNodeEqualsEngine) {
  cluster::NodeConfig c;
  c.id = "solo";
  c.head = true;
  c.shard = true;
  c.layer_begin = 0;
  c.layer_end = 30;
  c.model = testing::DefaultModel();
  c.threads = 1;
  auto node = Node::Start(c);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  client::JobClientOptions o;
  o.endpoint = (*node)->job_endpoint();
  auto client = client::JobClient::Connect(o);
  ASSERT_TRUE(client.ok());
  v1::JobSubmit job;
  job.set_prompt("The capital of France is");
  SamplingParams p;
  p.max_tokens = 16;
  *job.mutable_sampling() = SamplingParamsToProto(p);
  job.set_stream(true);
  std::vector<int32_t> ids;
  auto finish = (*client)->Run(job, [&](const v1::Token& t) { ids.push_back(t.token_id()); });
  ASSERT_TRUE(finish.ok()) << finish.status().ToString();
  ModelOptions options;
  options.threads = 1;
  auto engine = Engine::Load(testing::DefaultModel(), options);
  ASSERT_TRUE(engine.ok());
  EXPECT_EQ(ids, EngineIds(**engine, "The capital of France is", p));
}

}  // namespace
}  // namespace troupe::actors

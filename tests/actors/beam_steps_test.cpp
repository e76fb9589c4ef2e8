// BeamReplaySteps: after a reroute every beam row's cache is rebuilt from its
// own history — the prompt into row 0 through the shards only, one step per
// generated position (the first fanning row 0 out, the later ones keeping each
// row), and only the last step round the whole ring for logits.
#include "actors/beam_steps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace troupe::actors {
namespace {

v1::RouteHop Hop(v1::Stage stage, const char* node) {
  v1::RouteHop hop;
  hop.set_stage(stage);
  hop.set_node_id(node);
  return hop;
}

std::vector<v1::Stage> Stages(const v1::Step& step) {
  std::vector<v1::Stage> out;
  for (const v1::RouteHop& hop : step.rest_of_route()) out.push_back(hop.stage());
  return out;
}

template <class T>
std::vector<T> Vec(const google::protobuf::RepeatedField<T>& r) {
  return {r.begin(), r.end()};
}

TEST(BeamStepsTest, ReplayRebuildsEveryRowFromItsOwnHistory) {
  SamplingParams params;
  params.num_beams = 2;
  BeamSearch search = std::move(BeamSearch::Create(params, {0}, 8)).value();
  // Vocabulary of 4, token 0 is eos. Step 0: beams [2], [1]; step 1: row 0
  // ends (eos, kept as a hypothesis), row 1 (beam [1]) continues with 3 and
  // 2 -> beams [1,3], [1,2].
  auto logits = [](std::vector<double> p) {
    std::vector<float> out;
    for (double x : p) out.push_back(static_cast<float>(std::log(x)));
    return out;
  };
  std::vector<float> first = logits({.01, .39, .6, .0001});
  ASSERT_TRUE(search.Advance(first.data(), 1, 4).ok());
  std::vector<float> second = logits({.97, .01, .01, .01});
  for (float x : logits({.01, .01, .28, .7})) second.push_back(x);
  ASSERT_TRUE(search.Advance(second.data(), 2, 4).ok());
  ASSERT_EQ(search.parents(), (std::vector<int32_t>{1, 1}));
  ASSERT_EQ(search.beam_tokens(0), (std::vector<int32_t>{1, 3}));
  ASSERT_EQ(search.beam_tokens(1), (std::vector<int32_t>{1, 2}));

  const std::vector<v1::RouteHop> route = {Hop(v1::STAGE_EMBEDDING, "head"), Hop(v1::STAGE_SHARD, "a"),
                                           Hop(v1::STAGE_SHARD, "b"), Hop(v1::STAGE_LM_HEAD, "head"),
                                           Hop(v1::STAGE_SAMPLER, "head")};
  const std::vector<v1::Stage> shards = {v1::STAGE_EMBEDDING, v1::STAGE_SHARD, v1::STAGE_SHARD};
  const std::vector<v1::Stage> full = {v1::STAGE_EMBEDDING, v1::STAGE_SHARD, v1::STAGE_SHARD, v1::STAGE_LM_HEAD,
                                       v1::STAGE_SAMPLER};
  std::vector<v1::Step> steps = BeamReplaySteps(7, {5, 6, 7}, search, route);
  ASSERT_EQ(steps.size(), 3u);
  // The prompt into row 0 (a plain prefill: no parent rows).
  EXPECT_EQ(steps[0].session_id(), 7u);
  EXPECT_EQ(steps[0].first_position(), 0u);
  EXPECT_EQ(Vec(steps[0].token_ids()), (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(steps[0].parent_rows_size(), 0);
  EXPECT_EQ(Stages(steps[0]), shards);
  // Position 3: both rows start from row 0 with their first tokens.
  EXPECT_EQ(steps[1].first_position(), 3u);
  EXPECT_EQ(Vec(steps[1].token_ids()), (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(Vec(steps[1].parent_rows()), (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(Stages(steps[1]), shards);
  // Position 4: each row keeps its own cache; the logits come back.
  EXPECT_EQ(steps[2].first_position(), 4u);
  EXPECT_EQ(steps[2].token_count(), 2u);
  EXPECT_EQ(Vec(steps[2].token_ids()), (std::vector<int32_t>{3, 2}));
  EXPECT_EQ(Vec(steps[2].parent_rows()), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(Stages(steps[2]), full);
}

TEST(BeamStepsTest, NothingToReplayBeforeTheFirstStep) {
  SamplingParams params;
  params.num_beams = 2;
  BeamSearch search = std::move(BeamSearch::Create(params, {0}, 8)).value();
  EXPECT_TRUE(BeamReplaySteps(1, {5}, search, {}).empty());
}

}  // namespace
}  // namespace troupe::actors

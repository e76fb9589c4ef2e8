// The fuzz seed corpus (tests/fuzz/corpus, written by fuzz_corpus_gen) still
// matches the schema: valid-* seeds are accepted, reject-* seeds are not.
// When this fails after a schema or version change, regenerate the corpus:
//   build/bin/fuzz_corpus_gen tests/fuzz/corpus
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "messages/message_codec.h"
#include "messages/tensor_frame.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/seed_files.h"

namespace troupe {
namespace {

using fuzz_seeds::Seeds;

TEST(FuzzCorpusTest, EnvelopeSeeds) {
  int valid = 0;
  for (const auto& [name, bytes] : Seeds("envelope")) {
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    const std::vector<FrameRef> frames = fuzz::SplitEnvelopeInput(data, bytes.size());
    WireResult<InboundMessage> m = DecodeMessage(frames.data(), frames.size(), DecodeLimits());
    if (name.rfind("valid-", 0) == 0) {
      EXPECT_TRUE(m.ok()) << name << ": " << m.error().ToString();
      ++valid;
    } else if (name.rfind("reject-", 0) == 0) {
      EXPECT_FALSE(m.ok()) << name;
    }
  }
  EXPECT_GE(valid, 18);
}

TEST(FuzzCorpusTest, TensorSeeds) {
  int valid = 0;
  for (const auto& [name, bytes] : Seeds("tensor")) {
    const std::optional<fuzz::TensorInput> in =
        fuzz::ParseTensorInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ASSERT_TRUE(in) << name;
    DecodeLimits limits;
    WireResult<TensorFrame> f = MakeTensorFrame(in->desc, in->frame, in->size, nullptr, limits);
    if (name.rfind("valid-", 0) == 0) {
      EXPECT_TRUE(f.ok()) << name << ": " << f.error().ToString();
      ++valid;
    } else if (name.rfind("nonfinite-", 0) == 0) {
      ASSERT_FALSE(f.ok()) << name;
      EXPECT_EQ(f.error().code, v1::NON_FINITE) << name;
    }
  }
  EXPECT_EQ(valid, 12);
}

}  // namespace
}  // namespace troupe

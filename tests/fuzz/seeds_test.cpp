// The seed corpus of the file, text and request targets (tests/fuzz/corpus,
// written by fuzz_corpus_gen) still reaches what it is for: valid-* seeds are
// accepted by their parser, so fuzzing starts past the first checks, and
// reject-* seeds are refused. (The wire targets' seeds: messages_test.)
// When this fails after a format change, regenerate the corpus:
//   build/bin/fuzz_corpus_gen tests/fuzz/corpus
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cluster/node_config.h"
#include "http/openai_api.h"
#include "pipeline/format/gguf_file.h"
#include "pipeline/format/model_source.h"
#include "pipeline/format/safetensors_file.h"
#include "pipeline/text/tokenizer.h"
#include "pipeline/text/tokenizer_json.h"
#include "tests/fuzz/fuzz_files.h"
#include "tests/fuzz/seed_files.h"

namespace troupe {
namespace {

using fuzz_seeds::Seeds;

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

TEST(FuzzSeedsTest, GgufSeeds) {
  fuzz::ScratchFolder folder;
  int valid = 0;
  for (const auto& [name, bytes] : Seeds("gguf")) {
    const std::string path = folder.Write(name + ".gguf", bytes);
    Result<std::unique_ptr<GgufFile>> file = GgufFile::Open(path);
    if (StartsWith(name, "valid-")) {
      EXPECT_TRUE(file.ok()) << name << ": " << file.status().ToString();
      ++valid;
    } else if (StartsWith(name, "reject-")) {
      EXPECT_FALSE(file.ok()) << name;
    }
    if (name == "valid-model") {
      Result<std::unique_ptr<ModelSource>> source = ModelSource::Open(path);
      ASSERT_TRUE(source.ok()) << source.status().ToString();
      EXPECT_EQ((*source)->tensor_names().size(), 8u);
      EXPECT_TRUE(Tokenizer::Create((*source)->tokenizer_spec()).ok());
    }
  }
  EXPECT_EQ(valid, 3);
}

TEST(FuzzSeedsTest, SafetensorsSeeds) {
  fuzz::ScratchFolder folder;
  int valid = 0;
  for (const auto& [name, bytes] : Seeds("safetensors")) {
    Result<std::unique_ptr<SafetensorsFile>> file = SafetensorsFile::Open(folder.Write(name, bytes));
    if (StartsWith(name, "valid-")) {
      EXPECT_TRUE(file.ok()) << name << ": " << file.status().ToString();
      ++valid;
    } else if (StartsWith(name, "reject-")) {
      EXPECT_FALSE(file.ok()) << name;
    }
  }
  EXPECT_EQ(valid, 4);
}

TEST(FuzzSeedsTest, TokenizerJsonSeeds) {
  int valid = 0;
  for (const auto& [name, bytes] : Seeds("tokenizer_json")) {
    fuzz::ScratchFolder folder;
    const std::vector<std::string> parts =
        fuzz::SplitAtNul(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 4);
    const char* const files[] = {"tokenizer.json", "tokenizer_config.json", "config.json", "chat_template.jinja"};
    for (size_t i = 0; i < parts.size(); ++i) {
      if (!parts[i].empty()) folder.Write(files[i], parts[i]);
    }
    Result<TokenizerSpec> spec = LoadTokenizerJson(folder.path());
    if (StartsWith(name, "valid-")) {
      ASSERT_TRUE(spec.ok()) << name << ": " << spec.status().ToString();
      EXPECT_TRUE(Tokenizer::Create(*spec).ok()) << name;
      ++valid;
    } else if (StartsWith(name, "reject-")) {
      EXPECT_FALSE(spec.ok()) << name;
    }
  }
  EXPECT_EQ(valid, 5);
}

TEST(FuzzSeedsTest, NodeConfigSeeds) {
  int valid = 0;
  for (const auto& [name, text] : Seeds("node_config")) {
    const std::string first = text.substr(0, text.find('\0'));
    const std::vector<std::string> problems =
        cluster::ParseNodeConfigProblems(first, "/base", name, nullptr, /*read_key_files=*/false);
    if (StartsWith(name, "valid-")) {
      EXPECT_TRUE(problems.empty()) << name << ": " << problems.front();
      ++valid;
    } else if (StartsWith(name, "reject-")) {
      EXPECT_FALSE(problems.empty()) << name;
    }
  }
  EXPECT_EQ(valid, 4);
}

TEST(FuzzSeedsTest, ChatRequestSeeds) {
  int valid = 0;
  for (const auto& [name, body] : Seeds("chat_request")) {
    http::ParsedRequest request;
    const std::optional<http::ApiError> chat = http::ParseRequest(http::ApiKind::kChat, body, &request);
    const std::optional<http::ApiError> completion = http::ParseRequest(http::ApiKind::kCompletion, body, &request);
    if (StartsWith(name, "valid-chat")) {
      EXPECT_FALSE(chat) << name << ": " << chat->message;
      ++valid;
    } else if (StartsWith(name, "valid-completion")) {
      EXPECT_FALSE(completion) << name << ": " << completion->message;
      ++valid;
    } else if (StartsWith(name, "reject-")) {
      EXPECT_TRUE(chat && completion) << name;
    }
  }
  EXPECT_EQ(valid, 6);
}

}  // namespace
}  // namespace troupe

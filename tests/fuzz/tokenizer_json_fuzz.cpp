// libFuzzer target: a Hugging Face tokenizer folder through LoadTokenizerJson
// (its files written to a scratch folder first: the loader reads a folder,
// fuzz_files.h), then the Tokenizer and chat template it makes
// (tokenizer_check.h).
// Input: the files' texts between NUL bytes, in this order:
//   tokenizer.json NUL tokenizer_config.json NUL config.json NUL chat_template.jinja
// A file past the last part, or with an empty part, is absent.
// Properties checked (a violation aborts): a refusal is Corrupt, Unsupported
// or InvalidArgument (NotFound when tokenizer.json is absent) and names the
// file; an accepted spec has one type per token, special ids in the
// vocabulary (or -1), add_bos only with a BOS, and builds a tokenizer that
// keeps the properties of tokenizer_check.h or is refused with a message.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "pipeline/text/tokenizer_json.h"
#include "tests/fuzz/fuzz_files.h"
#include "tests/fuzz/tokenizer_check.h"

namespace troupe::fuzz {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tokenizer_json_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

const char* const kFiles[] = {"tokenizer.json", "tokenizer_config.json", "config.json", "chat_template.jinja"};

bool IdInVocabulary(int32_t id, const TokenizerSpec& spec) {
  return id >= -1 && id < static_cast<int64_t>(spec.tokens.size());
}

}  // namespace
}  // namespace troupe::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  static const fuzz::ScratchFolder folder;
  const std::vector<std::string> parts = fuzz::SplitAtNul(data, size, 4);
  for (size_t i = 0; i < 4; ++i) {
    if (i < parts.size() && !parts[i].empty()) {
      folder.Write(fuzz::kFiles[i], parts[i]);
    } else {
      folder.Remove(fuzz::kFiles[i]);
    }
  }
  Result<TokenizerSpec> spec = LoadTokenizerJson(folder.path());
  if (!spec.ok()) {
    const Status& st = spec.status();
    fuzz::Check(st.code() == StatusCode::kCorrupt || st.code() == StatusCode::kUnsupported ||
                    st.code() == StatusCode::kInvalidArgument ||
                    (st.code() == StatusCode::kNotFound && parts[0].empty()),
                "a refusal is Corrupt, Unsupported or InvalidArgument (NotFound without tokenizer.json)");
    fuzz::Check(st.message().rfind(folder.path() + "/", 0) == 0, "a refusal names the file");
    return 0;
  }
  fuzz::Check(spec->token_types.size() == spec->tokens.size(), "one type per token");
  for (int32_t id : {spec->bos_id, spec->eos_id, spec->eot_id, spec->pad_id}) {
    fuzz::Check(fuzz::IdInVocabulary(id, *spec), "special ids are in the vocabulary or -1");
  }
  fuzz::Check(!spec->add_bos || spec->bos_id >= 0, "add_bos only with a BOS token");
  fuzz::CheckTokenizerSpec(*spec);
  return 0;
}

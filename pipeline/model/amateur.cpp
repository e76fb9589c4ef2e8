#include "pipeline/model/amateur.h"

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "pipeline/model/decoder.h"
#include "pipeline/model/embedding.h"
#include "pipeline/model/kv_cache.h"
#include "pipeline/model/lm_head.h"

namespace troupe {
namespace {

constexpr int64_t kPrefillChunk = 512;  // as the Engine: bounds scratch memory

// FNV-1a, 64 bits.
void Mix(uint64_t* h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    *h ^= p[i];
    *h *= 0x100000001b3ull;
  }
}

std::string Describe(const std::string& role, const ModelSource& source) {
  return role + " " + source.path() + " (" + std::to_string(source.tokenizer_spec().tokens.size()) + " tokens, " +
         std::to_string(source.config().vocab) + " logits, vocabulary " +
         VocabularyFingerprint(source.tokenizer_spec()) + ")";
}

}  // namespace

std::string VocabularyFingerprint(const TokenizerSpec& spec) {
  uint64_t h = 0xcbf29ce484222325ull;
  const uint64_t n = spec.tokens.size();
  Mix(&h, &n, sizeof n);
  for (const std::string& t : spec.tokens) {
    const uint64_t len = t.size();
    Mix(&h, &len, sizeof len);
    Mix(&h, t.data(), t.size());
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, h);
  return hex;
}

AmateurModel::~AmateurModel() = default;

int64_t AmateurModel::vocab() const { return lm_head_->vocab(); }

Result<std::unique_ptr<AmateurModel>> AmateurModel::Load(const std::string& path, const ModelOptions& options,
                                                         const ModelSource& expert) {
  std::unique_ptr<AmateurModel> m(new AmateurModel());
  TROUPE_ASSIGN_OR_RETURN(m->source_, ModelSource::Open(path));
  const ModelSource& amateur = *m->source_;
  const bool same_size = amateur.tokenizer_spec().tokens.size() == expert.tokenizer_spec().tokens.size() &&
                         amateur.config().vocab == expert.config().vocab;
  if (!same_size || VocabularyFingerprint(amateur.tokenizer_spec()) != VocabularyFingerprint(expert.tokenizer_spec())) {
    return Status::InvalidArgument(
        "the amateur model must share the expert's vocabulary: " + Describe("amateur", amateur) + " vs " +
        Describe("expert", expert) + (same_size ? ": same size, different token bytes" : ": different sizes"));
  }
  TROUPE_ASSIGN_OR_RETURN(m->embedding_, Embedding::Load(amateur));
  TROUPE_ASSIGN_OR_RETURN(m->decoder_, Decoder::Load(amateur, 0, amateur.config().n_layers, options));
  TROUPE_ASSIGN_OR_RETURN(m->lm_head_, LmHead::Load(amateur, options));
  if (m->lm_head_->vocab() != expert.config().vocab) {
    return Status::InvalidArgument("the amateur model " + path + " has " + std::to_string(m->lm_head_->vocab()) +
                                   " LM head rows; the expert " + expert.path() + " has " +
                                   std::to_string(expert.config().vocab));
  }
  return m;
}

Result<std::unique_ptr<AmateurSession>> AmateurModel::OpenSession(int64_t max_length) const {
  const int64_t context = source_->config().max_positions;
  if (max_length > context) {
    return Status::OutOfRange("a session of " + std::to_string(max_length) + " positions does not fit the amateur " +
                              path() + " (context " + std::to_string(context) + ")");
  }
  TROUPE_ASSIGN_OR_RETURN(auto cache, KvCache::Create(decoder_->cache_shape(), max_length));
  return std::unique_ptr<AmateurSession>(new AmateurSession(*this, std::move(cache)));
}

AmateurSession::AmateurSession(const AmateurModel& model, std::unique_ptr<KvCache> cache)
    : model_(&model), cache_(std::move(cache)) {}

AmateurSession::~AmateurSession() = default;

Result<const float*> AmateurSession::LogitsAfter(const std::vector<int32_t>& tokens) {
  if (tokens.empty()) return Status::InvalidArgument("the amateur needs at least one token of history");
  if (tokens == fed_) return logits_.data();
  // Keep the common prefix, but always feed at least the last token (its
  // logits are the ones asked for).
  const size_t common =
      static_cast<size_t>(std::mismatch(fed_.begin(), fed_.end(), tokens.begin(), tokens.end()).first - fed_.begin());
  const size_t keep = std::min(common, tokens.size() - 1);
  cache_->Truncate(static_cast<int64_t>(keep));
  fed_.resize(keep);
  const int64_t n = static_cast<int64_t>(tokens.size());
  for (int64_t begin = static_cast<int64_t>(keep); begin < n; begin += kPrefillChunk) {
    const int64_t end = std::min(n, begin + kPrefillChunk);
    std::vector<int32_t> chunk(tokens.begin() + begin, tokens.begin() + end);
    Status s = cache_->Check(end - begin);
    if (s.ok()) {
      auto h = model_->embedding_->Forward(chunk);
      s = h.ok() ? model_->decoder_->Forward(*h, {SessionRows{cache_.get(), end - begin}}) : h.status();
      if (s.ok() && end == n) {
        at::Tensor last = h->slice(0, end - begin - 1, end - begin).contiguous();
        auto logits = model_->lm_head_->Forward(last);
        if (logits.ok()) {
          const float* row = logits->data_ptr<float>();
          logits_.assign(row, row + logits->size(1));
        } else {
          s = logits.status();
        }
      }
    }
    if (!s.ok()) {  // start over next time
      cache_->Truncate(0);
      fed_.clear();
      return s;
    }
    fed_.insert(fed_.end(), chunk.begin(), chunk.end());
  }
  return logits_.data();
}

}  // namespace troupe

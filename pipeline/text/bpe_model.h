// BpeModel: the vocabulary and ranked merges of a byte-level BPE tokenizer,
// and the merge loop that turns one pre-tokenized piece into token ids.
//
// A piece's bytes start as one symbol per byte (the token for that byte's
// GPT-2 character; failing that a "<0xXX>" byte token, then the unknown
// token; a byte with none of these is dropped). Adjacent symbols are then
// merged, lowest merge rank first and leftmost first among equal ranks, until
// no adjacent pair has a merge — the algorithm of Hugging Face `tokenizers`
// (a min-heap of candidate pairs over a linked list of symbols, O(n log n)).
// With `ignore_merges`, a piece that is itself a vocabulary token is emitted
// whole.
//
// Thread-safety: immutable after Create except for an internal piece cache
// guarded by a mutex, so EncodePiece may run on many threads at once.
// Failure: Create returns InvalidArgument naming the merge when a merge is
// malformed ("a b"), names a token not in the vocabulary, or produces one.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pipeline/status.h"
#include "pipeline/tokenizer_spec.h"

namespace troupe::text {

class BpeModel {
 public:
  // `tokens[id]` is the token text as stored in the vocabulary (byte-unicode
  // form for normal tokens). When two ids share a text the lower id wins.
  static Result<std::unique_ptr<BpeModel>> Create(const std::vector<std::string>& tokens,
                                                  const std::vector<TokenType>& types,
                                                  const std::vector<std::string>& merges, bool ignore_merges);

  // Appends the ids for the raw bytes of one piece to `out`.
  void EncodePiece(std::string_view piece, std::vector<int32_t>* out) const;

  // The id of a token given its stored text, if any.
  std::optional<int32_t> Find(std::string_view text) const;

 private:
  BpeModel() = default;
  void Merge(std::string_view piece, std::vector<int32_t>* out) const;

  struct MergeInfo {
    int32_t rank;
    int32_t merged_id;
  };
  static uint64_t PairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }

  std::unordered_map<std::string, int32_t> vocab_;
  std::unordered_map<uint64_t, MergeInfo> merges_;
  int32_t byte_ids_[256];  // initial symbol per raw byte, -1 = dropped
  bool ignore_merges_ = false;

  static constexpr size_t kMaxCacheEntries = 1 << 16;
  static constexpr size_t kMaxCachedPieceBytes = 256;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace troupe::text

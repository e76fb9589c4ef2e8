#include "pipeline/text/bpe_model.h"

#include <cstdio>
#include <queue>

#include "pipeline/text/byte_level.h"

namespace troupe::text {

Result<std::unique_ptr<BpeModel>> BpeModel::Create(const std::vector<std::string>& tokens,
                                                   const std::vector<TokenType>& types,
                                                   const std::vector<std::string>& merges, bool ignore_merges) {
  auto model = std::unique_ptr<BpeModel>(new BpeModel());
  model->ignore_merges_ = ignore_merges;
  model->vocab_.reserve(tokens.size());
  int32_t unk_id = -1;
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (tokens[id].empty()) continue;
    model->vocab_.emplace(tokens[id], static_cast<int32_t>(id));  // keeps the lower id
    if (unk_id < 0 && id < types.size() && types[id] == TokenType::kUnknown) {
      unk_id = static_cast<int32_t>(id);
    }
  }

  for (int b = 0; b < 256; ++b) {
    int32_t id = -1;
    if (auto found = model->Find(ByteToUnicode(static_cast<uint8_t>(b)))) {
      id = *found;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
      auto byte_token = model->Find(hex);
      id = byte_token ? *byte_token : unk_id;
    }
    model->byte_ids_[b] = id;
  }

  model->merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& merge = merges[rank];
    size_t space = merge.find(' ', 1);
    if (space == std::string::npos || space + 1 >= merge.size()) {
      return Status::InvalidArgument("merge " + std::to_string(rank) + " '" + merge +
                                     "' is not of the form 'left right'");
    }
    std::string_view left(merge.data(), space);
    std::string_view right(merge.data() + space + 1, merge.size() - space - 1);
    auto left_id = model->Find(left);
    auto right_id = model->Find(right);
    auto merged_id = model->Find(std::string(left) + std::string(right));
    if (!left_id || !right_id || !merged_id) {
      std::string missing = !left_id    ? std::string(left)
                            : !right_id ? std::string(right)
                                        : std::string(left) + std::string(right);
      return Status::InvalidArgument("merge " + std::to_string(rank) + " '" + merge +
                                     "' names a token not in the vocabulary: '" + missing + "'");
    }
    model->merges_.emplace(PairKey(*left_id, *right_id),
                           MergeInfo{static_cast<int32_t>(rank), *merged_id});  // first rank wins
  }
  return model;
}

std::optional<int32_t> BpeModel::Find(std::string_view text) const {
  auto it = vocab_.find(std::string(text));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void BpeModel::EncodePiece(std::string_view piece, std::vector<int32_t>* out) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    if (auto id = Find(BytesToUnicode(piece))) {
      out->push_back(*id);
      return;
    }
  }
  if (piece.size() == 1) {  // nothing to merge, nothing worth caching
    if (byte_ids_[static_cast<uint8_t>(piece[0])] >= 0) {
      out->push_back(byte_ids_[static_cast<uint8_t>(piece[0])]);
    }
    return;
  }
  const bool cacheable = piece.size() <= kMaxCachedPieceBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(std::string(piece));
    if (it != cache_.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  Merge(piece, &ids);
  out->insert(out->end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.emplace(std::string(piece), std::move(ids));
  }
}

void BpeModel::Merge(std::string_view piece, std::vector<int32_t>* out) const {
  // Symbols form a doubly linked list over positions; a merged-away symbol is
  // marked dead and skipped.
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(piece.size());
  for (unsigned char c : piece) {
    int32_t id = byte_ids_[c];
    if (id < 0) continue;  // a byte the vocabulary cannot express
    int32_t pos = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, pos - 1, -1, true});
    if (pos > 0) symbols[pos - 1].next = pos;
  }

  struct Candidate {
    int32_t rank;
    int32_t pos;  // left symbol
    int32_t merged_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto push_pair = [&](int32_t pos) {
    if (pos < 0 || symbols[pos].next < 0) return;
    auto it = merges_.find(PairKey(symbols[pos].id, symbols[symbols[pos].next].id));
    if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.merged_id});
  };
  for (int32_t pos = 0; pos + 1 < static_cast<int32_t>(symbols.size()); ++pos) push_pair(pos);

  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    // A stale entry: the pair at this position changed since it was queued.
    auto it = merges_.find(PairKey(left.id, symbols[left.next].id));
    if (it == merges_.end() || it->second.merged_id != top.merged_id) continue;

    Symbol& right = symbols[left.next];
    left.id = top.merged_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    push_pair(left.prev);
    push_pair(top.pos);
  }
  for (const Symbol& s : symbols) {
    if (s.alive) out->push_back(s.id);
  }
}

}  // namespace troupe::text

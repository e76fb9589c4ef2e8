#include "pipeline/text/spm_model.h"

#include <cmath>
#include <cstdio>
#include <queue>

namespace troupe::text {
namespace {

const char kSpaceMarker[] = "\xE2\x96\x81";  // U+2581 "▁"

// Bytes in the UTF-8 character that starts with `lead`, judged by its high
// nibble alone (a continuation or invalid byte counts as 1).
size_t CharLength(unsigned char lead) {
  static const size_t kLength[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLength[lead >> 4];
}

}  // namespace

Result<std::unique_ptr<SpmModel>> SpmModel::Create(const std::vector<std::string>& tokens,
                                                   const std::vector<float>& scores, int32_t unk_id) {
  if (scores.empty()) {
    return Status::InvalidArgument("SentencePiece tokenizer has no scores (tokenizer.ggml.scores)");
  }
  if (scores.size() != tokens.size()) {
    return Status::InvalidArgument("SentencePiece tokenizer has " + std::to_string(tokens.size()) + " tokens but " +
                                   std::to_string(scores.size()) + " scores");
  }
  for (size_t id = 0; id < scores.size(); ++id) {
    if (std::isnan(scores[id])) {
      return Status::InvalidArgument("SentencePiece tokenizer score of token " + std::to_string(id) + " is NaN");
    }
  }
  auto model = std::unique_ptr<SpmModel>(new SpmModel());
  model->scores_ = scores;
  model->vocab_.reserve(tokens.size());
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (!tokens[id].empty()) model->vocab_.emplace(tokens[id], static_cast<int32_t>(id));  // keeps the lower id
  }
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    auto id = model->Find(hex);
    if (!id) id = model->Find(std::string(1, static_cast<char>(b)));
    model->byte_ids_[b] = id ? *id : unk_id;
  }
  return model;
}

std::optional<int32_t> SpmModel::Find(std::string_view text) const {
  auto it = vocab_.find(std::string(text));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void SpmModel::EncodeFragment(std::string_view raw, bool prefix_space, std::vector<int32_t>* out) const {
  if (raw.empty()) return;
  std::string text;
  text.reserve(raw.size() + 8);
  if (prefix_space) text += kSpaceMarker;
  for (char c : raw) {
    if (c == ' ') {
      text += kSpaceMarker;
    } else {
      text += c;
    }
  }

  // Symbols are contiguous stretches of `text` in a doubly linked list; a
  // symbol merged into its left neighbour gets length 0.
  struct Symbol {
    size_t start;
    size_t len;
    int32_t prev;
    int32_t next;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t len = std::min(CharLength(static_cast<unsigned char>(text[pos])), text.size() - pos);
    int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({pos, len, index - 1, pos + len < text.size() ? index + 1 : -1});
    pos += len;
  }

  struct Pair {
    float score;
    int32_t left;
    int32_t right;
    size_t len;  // bytes of both symbols when queued; a mismatch later means the pair is stale
  };
  // Highest score first; among equal scores the leftmost.
  auto lower = [](const Pair& a, const Pair& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Pair, std::vector<Pair>, decltype(lower)> queue(lower);
  auto push_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    size_t len = symbols[left].len + symbols[right].len;
    auto id = Find(std::string_view(text).substr(symbols[left].start, len));
    if (id) queue.push({scores_[*id], left, right, len});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) push_pair(i - 1, i);

  while (!queue.empty()) {
    Pair top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    if (left.len == 0 || right.len == 0 || left.len + right.len != top.len) continue;
    left.len += right.len;
    right.len = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    push_pair(left.prev, top.left);
    push_pair(top.left, left.next);
  }

  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    std::string_view piece = std::string_view(text).substr(symbols[i].start, symbols[i].len);
    if (auto id = Find(piece)) {
      out->push_back(*id);
      continue;
    }
    for (unsigned char c : piece) {
      if (byte_ids_[c] >= 0) out->push_back(byte_ids_[c]);
    }
  }
}

}  // namespace troupe::text

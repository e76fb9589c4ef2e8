#include "pipeline/text/tokenizer.h"

#include <algorithm>
#include <cstring>

#include "pipeline/text/bpe_model.h"
#include "pipeline/text/byte_level.h"
#include "pipeline/text/pre_tokenizer.h"
#include "pipeline/text/spm_model.h"

namespace troupe {
namespace {

const std::string kEmpty;
const char kSpaceMarker[] = "\xE2\x96\x81";  // U+2581 "▁", SentencePiece's space

// A SentencePiece token's text with each "▁" turned back into a space.
std::string UnescapeSpaces(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 3, kSpaceMarker) == 0) {
      out += ' ';
      i += 3;
    } else {
      out += text[i++];
    }
  }
  return out;
}

// "<0x41>" -> 0x41; nullopt for anything else.
std::optional<uint8_t> ParseByteToken(const std::string& text) {
  if (text.size() != 6 || text.compare(0, 3, "<0x") != 0 || text[5] != '>') return std::nullopt;
  unsigned value = 0;
  for (int i = 3; i < 5; ++i) {
    char c = text[i];
    int digit = (c >= '0' && c <= '9')   ? c - '0'
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                         : -1;
    if (digit < 0) return std::nullopt;
    value = value * 16 + static_cast<unsigned>(digit);
  }
  return static_cast<uint8_t>(value);
}

bool IsAddedType(TokenType t) {
  return t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown;
}

Status CheckId(const char* what, int32_t id, size_t vocab_size) {
  if (id < -1 || id >= static_cast<int64_t>(vocab_size)) {
    return Status::InvalidArgument(std::string("tokenizer ") + what + " id " + std::to_string(id) +
                                   " is outside the vocabulary of " + std::to_string(vocab_size));
  }
  return Status::Ok();
}

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::Create(const TokenizerSpec& spec) {
  const bool spm = spec.model == "llama";
  if (spec.model != "gpt2" && !spm) {
    return Status::Unsupported("tokenizer model '" + spec.model +
                               "' is not supported (only byte-level BPE 'gpt2' and SentencePiece 'llama')");
  }
  const size_t n = spec.tokens.size();
  if (n == 0) return Status::InvalidArgument("tokenizer vocabulary is empty");
  if (n > static_cast<size_t>(INT32_MAX)) return Status::InvalidArgument("tokenizer vocabulary too large");
  if (!spec.token_types.empty() && spec.token_types.size() != n) {
    return Status::InvalidArgument("tokenizer has " + std::to_string(n) + " tokens but " +
                                   std::to_string(spec.token_types.size()) + " token types");
  }
  TROUPE_RETURN_IF_ERROR(CheckId("bos", spec.bos_id, n));
  TROUPE_RETURN_IF_ERROR(CheckId("eos", spec.eos_id, n));
  TROUPE_RETURN_IF_ERROR(CheckId("eot", spec.eot_id, n));
  TROUPE_RETURN_IF_ERROR(CheckId("unknown", spec.unk_id, n));
  if (spec.add_bos && spec.bos_id < 0) {
    return Status::InvalidArgument("tokenizer asks to add BOS but has no BOS token");
  }

  auto tok = std::unique_ptr<Tokenizer>(new Tokenizer());
  tok->types_ = spec.token_types.empty() ? std::vector<TokenType>(n, TokenType::kNormal) : spec.token_types;
  if (spm) {
    TROUPE_ASSIGN_OR_RETURN(tok->spm_, text::SpmModel::Create(spec.tokens, spec.scores, spec.unk_id));
    tok->add_space_prefix_ = spec.add_space_prefix;
  } else {
    TROUPE_ASSIGN_OR_RETURN(tok->pre_, text::PreTokenizer::Create(spec.pre));
    TROUPE_ASSIGN_OR_RETURN(tok->bpe_,
                            text::BpeModel::Create(spec.tokens, tok->types_, spec.merges, tok->pre_->ignore_merges()));
  }
  tok->texts_ = spec.tokens;
  tok->bytes_.resize(n);
  for (size_t id = 0; id < n; ++id) {
    const std::string& text = spec.tokens[id];
    TokenType type = tok->types_[id];
    if (IsAddedType(type)) {
      tok->bytes_[id] = text;  // added tokens are stored as plain text
      if (!text.empty()) {
        tok->added_[static_cast<unsigned char>(text[0])].push_back(
            {text, static_cast<int32_t>(id), type != TokenType::kUserDefined});
      }
    } else if (auto byte = type == TokenType::kByte ? ParseByteToken(text) : std::nullopt) {
      tok->bytes_[id] = std::string(1, static_cast<char>(*byte));
    } else {
      tok->bytes_[id] = spm ? UnescapeSpaces(text) : text::UnicodeToBytes(text);
    }
  }
  for (auto& [first, list] : tok->added_) {
    std::stable_sort(list.begin(), list.end(),
                     [](const AddedToken& a, const AddedToken& b) { return a.text.size() > b.text.size(); });
  }
  tok->bos_id_ = spec.bos_id;
  tok->eos_id_ = spec.eos_id;
  tok->eot_id_ = spec.eot_id;
  tok->add_bos_ = spec.add_bos;
  return tok;
}

const Tokenizer::AddedToken* Tokenizer::MatchAdded(std::string_view text, size_t pos, bool parse_special) const {
  auto it = added_.find(static_cast<unsigned char>(text[pos]));
  if (it == added_.end()) return nullptr;
  for (const AddedToken& token : it->second) {
    if (token.special && !parse_special) continue;
    if (token.text.size() <= text.size() - pos &&
        std::memcmp(token.text.data(), text.data() + pos, token.text.size()) == 0) {
      return &token;
    }
  }
  return nullptr;
}

void Tokenizer::EncodeText(std::string_view text, std::vector<int32_t>* out) const {
  if (spm_) {
    // Every stretch of plain text follows the start or an added token, so
    // each gets the dummy prefix (llama.cpp's "is_prev_special").
    spm_->EncodeFragment(text, add_space_prefix_, out);
    return;
  }
  std::vector<std::string_view> pieces;
  pre_->Split(text, &pieces);
  for (std::string_view piece : pieces) bpe_->EncodePiece(piece, out);
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 2);
  if (add_bos && bos_id_ >= 0) ids.push_back(bos_id_);
  size_t start = 0;  // start of the plain text not yet encoded
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedToken* match = added_.empty() ? nullptr : MatchAdded(text, pos, parse_special);
    if (match == nullptr) {
      ++pos;
      continue;
    }
    EncodeText(text.substr(start, pos - start), &ids);
    ids.push_back(match->id);
    pos += match->text.size();
    start = pos;
  }
  EncodeText(text.substr(start), &ids);
  return ids;
}

std::string Tokenizer::Decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) out += TokenBytes(id);
  return out;
}

const std::string& Tokenizer::TokenBytes(int32_t id) const {
  return id >= 0 && id < vocab_size() ? bytes_[id] : kEmpty;
}

const std::string& Tokenizer::TokenText(int32_t id) const { return id >= 0 && id < vocab_size() ? texts_[id] : kEmpty; }

TokenType Tokenizer::token_type(int32_t id) const {
  return id >= 0 && id < vocab_size() ? types_[id] : TokenType::kUnused;
}

std::optional<int32_t> Tokenizer::TokenId(std::string_view token_text) const {
  return spm_ ? spm_->Find(token_text) : bpe_->Find(token_text);
}

}  // namespace troupe

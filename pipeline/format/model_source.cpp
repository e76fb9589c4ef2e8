#include "pipeline/format/model_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <sstream>

#include "pipeline/format/gguf_file.h"
#include "pipeline/format/hf_checkpoint.h"
#include "pipeline/model_family.h"
#include "pipeline/text/end_of_turn.h"
#include "pipeline/text/tokenizer_json.h"

namespace troupe {
namespace {

std::string ShapeString(const std::vector<int64_t>& s) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  o << "]";
  return o.str();
}

class GgufModelSource final : public ModelSource {
 public:
  static Result<std::unique_ptr<ModelSource>> Open(const std::string& path) {
    TROUPE_ASSIGN_OR_RETURN(auto file, GgufFile::Open(path));
    std::unique_ptr<GgufModelSource> src(new GgufModelSource());
    TROUPE_ASSIGN_OR_RETURN(src->config_, ModelConfigFromGguf(*file));
    TROUPE_ASSIGN_OR_RETURN(src->spec_, TokenizerSpecFromGguf(*file));
    if (src->config_.vocab != static_cast<int64_t>(src->spec_.tokens.size()))
      return Status::Corrupt(path + ": the vocabulary has " + std::to_string(src->spec_.tokens.size()) +
                             " tokens but the model expects " + std::to_string(src->config_.vocab));
    src->path_ = path;
    std::ostringstream fp;
    const ModelConfig& c = src->config_;
    fp << c.architecture << "-L" << c.n_layers << "-H" << c.hidden << "-V" << c.vocab << "-T" << file->tensors().size();
    // FNV-1a over the header (metadata, tensor names, types, shapes, offsets)
    // and the last page of the file, which holds weight bytes that tell two
    // fine-tunes of one architecture apart. Nothing else is read: a shard must
    // not fault in pages of layers it does not serve.
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](const uint8_t* p, uint64_t n) {
      for (uint64_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    };
    mix(file->bytes(), file->header_size());
    const uint64_t tail = std::min<uint64_t>(4096, file->size() - file->header_size());
    mix(file->bytes() + file->size() - tail, tail);
    fp << "-" << std::hex << h;
    src->fingerprint_ = fp.str();
    src->file_ = std::move(file);
    return std::unique_ptr<ModelSource>(std::move(src));
  }

  const std::string& path() const override { return path_; }
  const ModelConfig& config() const override { return config_; }
  const TokenizerSpec& tokenizer_spec() const override { return spec_; }
  const TensorView* Find(const std::string& name) const override { return file_->FindTensor(name); }
  std::vector<std::string> tensor_names() const override {
    std::vector<std::string> names;
    names.reserve(file_->tensors().size());
    for (const TensorView& t : file_->tensors()) names.push_back(t.name);
    return names;
  }
  std::string fingerprint() const override { return fingerprint_; }

 private:
  std::string path_;
  std::unique_ptr<GgufFile> file_;
  ModelConfig config_;
  TokenizerSpec spec_;
  std::string fingerprint_;
};

// A Hugging Face folder: config.json + safetensors + tokenizer.json. Tensors
// are exposed under GGUF names by HfCheckpoint; q/k rows stay in HF order,
// which config.rope_style (kHalves) tells the decoder.
class HfModelSource final : public ModelSource {
 public:
  static Result<std::unique_ptr<ModelSource>> Open(const std::string& dir) {
    std::unique_ptr<HfModelSource> src(new HfModelSource());
    TROUPE_ASSIGN_OR_RETURN(src->checkpoint_, HfCheckpoint::Open(dir));
    TROUPE_ASSIGN_OR_RETURN(src->spec_, LoadTokenizerJson(dir));
    src->path_ = dir;
    const ModelConfig& c = src->checkpoint_->config();
    if (static_cast<int64_t>(src->spec_.tokens.size()) > c.vocab)
      return Status::Corrupt(dir + ": tokenizer.json has " + std::to_string(src->spec_.tokens.size()) +
                             " tokens but the model's vocabulary is " + std::to_string(c.vocab));
    std::ostringstream fp;
    fp << "hf-" << c.architecture << "-L" << c.n_layers << "-H" << c.hidden << "-V" << c.vocab;
    // FNV-1a over every tensor's name, type and shape, and over the final
    // norm's weights: a few KB that differ between fine-tunes of one
    // architecture. No other weight page is read (a shard reads only its own).
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](const uint8_t* p, uint64_t n) {
      for (uint64_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    };
    for (const std::string& name : src->checkpoint_->names()) {
      const TensorView* t = src->checkpoint_->Find(name);
      mix(reinterpret_cast<const uint8_t*>(name.data()), name.size());
      const uint32_t type = static_cast<uint32_t>(t->type);
      mix(reinterpret_cast<const uint8_t*>(&type), sizeof(type));
      for (int64_t d : t->shape) mix(reinterpret_cast<const uint8_t*>(&d), sizeof(d));
    }
    if (const TensorView* norm = src->checkpoint_->Find("output_norm.weight")) mix(norm->data, norm->n_bytes);
    fp << "-" << std::hex << h;
    src->fingerprint_ = fp.str();
    return std::unique_ptr<ModelSource>(std::move(src));
  }

  const std::string& path() const override { return path_; }
  const ModelConfig& config() const override { return checkpoint_->config(); }
  const TokenizerSpec& tokenizer_spec() const override { return spec_; }
  const TensorView* Find(const std::string& name) const override { return checkpoint_->Find(name); }
  std::vector<std::string> tensor_names() const override { return checkpoint_->names(); }
  std::string fingerprint() const override { return fingerprint_; }

 private:
  std::string path_;
  std::unique_ptr<HfCheckpoint> checkpoint_;
  TokenizerSpec spec_;
  std::string fingerprint_;
};

}  // namespace

Result<const TensorView*> ModelSource::Require(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorView* t = Find(name);
  if (!t) return Status::NotFound(path() + ": tensor '" + name + "' is missing");
  if (t->shape != shape)
    return Status::InvalidArgument(path() + ": tensor '" + name + "' has shape " + ShapeString(t->shape) +
                                   ", expected " + ShapeString(shape));
  return t;
}

Result<ModelConfig> ModelConfigFromGguf(const GgufFile& f) {
  ModelConfig c;
  TROUPE_ASSIGN_OR_RETURN(const std::string a, f.GetString("general.architecture"));
  const ModelFamily* family = FindFamily(a);
  if (!family)
    return Status::Unsupported(f.path() + ": architecture '" + a + "' is not supported (Troupe runs " +
                               KnownArchitectures() + ")");
  if (auto n = f.GetString("general.name"); n.ok()) c.name = n.value();
  TROUPE_ASSIGN_OR_RETURN(c.n_layers, f.GetInt(a + ".block_count"));
  TROUPE_ASSIGN_OR_RETURN(c.hidden, f.GetInt(a + ".embedding_length"));
  TROUPE_ASSIGN_OR_RETURN(c.n_heads, f.GetInt(a + ".attention.head_count"));
  c.n_kv_heads = c.n_heads;
  if (auto kv = f.GetInt(a + ".attention.head_count_kv"); kv.ok()) c.n_kv_heads = kv.value();
  TROUPE_ASSIGN_OR_RETURN(c.intermediate, f.GetInt(a + ".feed_forward_length"));
  TROUPE_ASSIGN_OR_RETURN(c.max_positions, f.GetInt(a + ".context_length"));
  c.head_dim = c.n_heads > 0 ? c.hidden / c.n_heads : 0;
  if (auto kl = f.GetInt(a + ".attention.key_length"); kl.ok()) c.head_dim = kl.value();
  if (auto vl = f.GetInt(a + ".attention.value_length"); vl.ok() && vl.value() != c.head_dim)
    return Status::Unsupported(f.path() + ": value heads of " + std::to_string(vl.value()) +
                               " differ from key heads of " + std::to_string(c.head_dim));
  if (auto eps = f.GetFloat(a + ".attention.layer_norm_rms_epsilon"); eps.ok())
    c.rms_eps = static_cast<float>(eps.value());
  if (auto th = f.GetFloat(a + ".rope.freq_base"); th.ok()) c.rope_theta = static_cast<float>(th.value());
  if (auto st = f.GetString(a + ".rope.scaling.type"); st.ok() && st.value() != "none") {
    return Status::Unsupported(f.path() + ": rope scaling type '" + st.value() + "' is not supported");
  }
  if (auto cap = f.GetFloat(a + ".final_logit_softcapping"); cap.ok() && cap.value() != 0)
    return Status::Unsupported(f.path() + ": final logit soft-capping is not supported");
  if (family->sliding_pattern > 0) {
    if (auto w = f.GetInt(a + ".attention.sliding_window"); w.ok()) c.sliding_window = w.value();
  }
  ApplyFamily(*family, &c);
  if (c.sliding_window > 0) {
    // The file may name the sliding layers (an array of flags) or the pattern.
    if (f.Find(a + ".attention.sliding_window_pattern")) {
      if (auto flags = f.GetIntArray(a + ".attention.sliding_window_pattern"); flags.ok()) {
        if (static_cast<int64_t>(flags->size()) != c.n_layers)
          return Status::Corrupt(f.path() + ": " + a + ".attention.sliding_window_pattern has " +
                                 std::to_string(flags->size()) + " flags for " + std::to_string(c.n_layers) +
                                 " layers");
        for (int64_t l = 0; l < c.n_layers; ++l) c.sliding_layers[l] = (*flags)[l] != 0;
      } else {
        TROUPE_ASSIGN_OR_RETURN(int64_t n, f.GetInt(a + ".attention.sliding_window_pattern"));
        for (int64_t l = 0; l < c.n_layers; ++l) c.sliding_layers[l] = n == 0 || l % n < n - 1;
      }
    }
    if (auto th = f.GetFloat(a + ".rope.freq_base_swa"); th.ok()) c.rope_theta_sliding = static_cast<float>(th.value());
  }
  c.qkv_bias = f.FindTensor("blk.0.attn_q.bias") != nullptr;
  const TensorView* emb = f.FindTensor("token_embd.weight");
  if (!emb) return Status::NotFound(f.path() + ": tensor 'token_embd.weight' is missing");
  if (emb->shape.size() != 2 || emb->shape[1] != c.hidden)
    return Status::Corrupt(f.path() + ": token_embd.weight does not have the model width " + std::to_string(c.hidden));
  c.vocab = emb->shape[0];
  c.tied_embeddings = f.FindTensor("output.weight") == nullptr;
  if (std::string why = c.Validate(); !why.empty()) return Status::Corrupt(f.path() + ": " + why);
  return c;
}

Result<TokenizerSpec> TokenizerSpecFromGguf(const GgufFile& f) {
  TokenizerSpec s;
  TROUPE_ASSIGN_OR_RETURN(s.model, f.GetString("tokenizer.ggml.model"));
  if (auto pre = f.GetString("tokenizer.ggml.pre"); pre.ok()) s.pre = pre.value();
  TROUPE_ASSIGN_OR_RETURN(s.tokens, f.GetStringArray("tokenizer.ggml.tokens"));
  s.token_types.assign(s.tokens.size(), TokenType::kNormal);
  if (f.Find("tokenizer.ggml.token_type")) {
    TROUPE_ASSIGN_OR_RETURN(auto types, f.GetIntArray("tokenizer.ggml.token_type"));
    if (types.size() != s.tokens.size())
      return Status::Corrupt(f.path() + ": tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                             " entries for " + std::to_string(s.tokens.size()) + " tokens");
    for (size_t i = 0; i < types.size(); ++i) s.token_types[i] = static_cast<TokenType>(types[i]);
  }
  if (f.Find("tokenizer.ggml.merges")) {
    TROUPE_ASSIGN_OR_RETURN(s.merges, f.GetStringArray("tokenizer.ggml.merges"));
  }
  if (f.Find("tokenizer.ggml.scores")) {
    TROUPE_ASSIGN_OR_RETURN(auto scores, f.GetFloatArray("tokenizer.ggml.scores"));
    s.scores.assign(scores.begin(), scores.end());  // stored as f32; the Tokenizer checks the count
  }
  // llama.cpp's defaults for a SentencePiece vocabulary whose file is silent.
  const bool spm = s.model == "llama";
  s.add_space_prefix = spm;
  s.add_bos = spm;
  if (auto prefix = f.GetBool("tokenizer.ggml.add_space_prefix"); prefix.ok()) s.add_space_prefix = prefix.value();
  auto id = [&](const char* key, int32_t* out) -> Status {
    if (!f.Find(key)) return Status::Ok();
    TROUPE_ASSIGN_OR_RETURN(int64_t v, f.GetInt(key));
    if (v < 0 || v >= static_cast<int64_t>(s.tokens.size()))
      return Status::Corrupt(f.path() + ": " + key + " = " + std::to_string(v) + " is not a token id");
    *out = static_cast<int32_t>(v);
    return Status::Ok();
  };
  TROUPE_RETURN_IF_ERROR(id("tokenizer.ggml.bos_token_id", &s.bos_id));
  TROUPE_RETURN_IF_ERROR(id("tokenizer.ggml.eos_token_id", &s.eos_id));
  TROUPE_RETURN_IF_ERROR(id("tokenizer.ggml.eot_token_id", &s.eot_id));
  if (s.eot_id < 0) s.eot_id = FindEndOfTurn(s);  // Gemma's <end_of_turn> is not named in its file
  TROUPE_RETURN_IF_ERROR(id("tokenizer.ggml.padding_token_id", &s.pad_id));
  TROUPE_RETURN_IF_ERROR(id("tokenizer.ggml.unknown_token_id", &s.unk_id));
  if (auto add = f.GetBool("tokenizer.ggml.add_bos_token"); add.ok()) s.add_bos = add.value();
  if (auto tmpl = f.GetString("tokenizer.chat_template"); tmpl.ok()) s.chat_template = tmpl.value();
  return s;
}

Result<std::unique_ptr<ModelSource>> ModelSource::Open(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::NotFound(path + ": no such file or folder");
  if (S_ISDIR(st.st_mode)) return HfModelSource::Open(path);
  return GgufModelSource::Open(path);
}

}  // namespace troupe

#include "pipeline/format/hf_checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

namespace troupe {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

// Largest accepted value of a dimension in config.json, so that products of
// two dimensions fit in int64_t.
constexpr int64_t kMaxDim = int64_t{1} << 31;

// ------------------------------------------------------------ config.json

// Typed reads of config.json fields; absent and null both mean "use default".
class ConfigFields {
 public:
  ConfigFields(const Json& j, const std::string& origin) : j_(j), origin_(origin) {}

  const Json* Get(const char* key) const {
    const auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }

  // A dimension in [1, kMaxDim]. Absent: `fallback` if given, else an error.
  Status Dim(const char* key, int64_t* out, const int64_t* fallback = nullptr) const {
    const Json* v = Get(key);
    if (v == nullptr) {
      if (fallback != nullptr) {
        *out = *fallback;
        return Status::Ok();
      }
      return Status::Corrupt(origin_ + ": missing \"" + key + "\"");
    }
    if (!v->is_number_integer()) {
      return Status::Corrupt(origin_ + ": \"" + key + "\" must be an integer");
    }
    const int64_t n = v->get<int64_t>();
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(kMaxDim)) {
      return Status::InvalidArgument(origin_ + ": \"" + key + "\" is too large");
    }
    if (n < 1 || n > kMaxDim) {
      return Status::InvalidArgument(origin_ + ": \"" + key + "\" = " + std::to_string(n) + " is out of range");
    }
    *out = n;
    return Status::Ok();
  }

  Status Float(const char* key, float* out, float fallback) const {
    const Json* v = Get(key);
    if (v == nullptr) {
      *out = fallback;
      return Status::Ok();
    }
    if (!v->is_number()) return Status::Corrupt(origin_ + ": \"" + key + "\" must be a number");
    *out = v->get<float>();
    return Status::Ok();
  }

  Status Bool(const char* key, bool* out, bool fallback) const {
    const Json* v = Get(key);
    if (v == nullptr) {
      *out = fallback;
      return Status::Ok();
    }
    if (!v->is_boolean()) {
      return Status::Corrupt(origin_ + ": \"" + key + "\" must be true or false");
    }
    *out = v->get<bool>();
    return Status::Ok();
  }

  Status String(const char* key, std::string* out, const std::string& fallback) const {
    const Json* v = Get(key);
    if (v == nullptr) {
      *out = fallback;
      return Status::Ok();
    }
    if (!v->is_string()) return Status::Corrupt(origin_ + ": \"" + key + "\" must be a string");
    *out = v->get<std::string>();
    return Status::Ok();
  }

 private:
  const Json& j_;
  const std::string& origin_;
};

enum class Family { kLlama, kMistral, kQwen2 };

struct KnownArchitecture {
  const char* architecture;
  const char* model_type;
  Family family;
};
constexpr KnownArchitecture kArchitectures[] = {
    {"LlamaForCausalLM", "llama", Family::kLlama},
    {"MistralForCausalLM", "mistral", Family::kMistral},
    {"Qwen2ForCausalLM", "qwen2", Family::kQwen2},
};

// From "architectures" (the first known entry), else from "model_type".
Result<Family> ReadFamily(const Json& j, const std::string& origin) {
  std::string listed;
  const auto archs = j.find("architectures");
  if (archs != j.end() && !archs->is_null()) {
    if (!archs->is_array()) return Status::Corrupt(origin + ": \"architectures\" must be an array");
    for (const Json& a : *archs) {
      if (!a.is_string()) return Status::Corrupt(origin + ": \"architectures\" must hold strings");
      for (const auto& known : kArchitectures) {
        if (a.get<std::string>() == known.architecture) return known.family;
      }
      listed += (listed.empty() ? "" : ", ") + a.get<std::string>();
    }
  }
  const auto type = j.find("model_type");
  if (listed.empty() && type != j.end() && type->is_string()) {
    for (const auto& known : kArchitectures) {
      if (type->get<std::string>() == known.model_type) return known.family;
    }
    listed = "model_type " + type->get<std::string>();
  }
  if (listed.empty()) listed = "none given";
  return Status::Unsupported(origin + ": architecture (" + listed +
                             ") is not supported; Troupe reads LlamaForCausalLM, "
                             "MistralForCausalLM and Qwen2ForCausalLM");
}

// rope_theta and rope_scaling, in either the classic layout ("rope_theta",
// "rope_scaling") or the newer "rope_parameters" object.
Status ReadRope(const Json& j, const std::string& origin, ModelConfig* config) {
  const ConfigFields top(j, origin);
  const Json* params = top.Get("rope_parameters");
  if (params != nullptr && !params->is_object()) {
    return Status::Corrupt(origin + ": \"rope_parameters\" must be an object");
  }
  const Json* scaling = top.Get("rope_scaling");
  if (scaling != nullptr && !scaling->is_object()) {
    return Status::Corrupt(origin + ": \"rope_scaling\" must be an object or null");
  }
  if (top.Get("rope_theta") != nullptr || params == nullptr) {
    TROUPE_RETURN_IF_ERROR(top.Float("rope_theta", &config->rope_theta, 10000.0f));
  } else {
    TROUPE_RETURN_IF_ERROR(ConfigFields(*params, origin).Float("rope_theta", &config->rope_theta, 10000.0f));
  }
  if (scaling == nullptr) scaling = params;
  if (scaling == nullptr) return Status::Ok();

  const ConfigFields s(*scaling, origin + ": rope scaling");
  std::string type;
  TROUPE_RETURN_IF_ERROR(s.String("rope_type", &type, ""));
  if (type.empty()) TROUPE_RETURN_IF_ERROR(s.String("type", &type, "default"));
  if (type == "default") return Status::Ok();
  if (type != "llama3") {
    return Status::Unsupported(origin + ": rope scaling type '" + type + "' is not supported (only llama3)");
  }
  RopeScaling& r = config->rope_scaling;
  r.llama3 = true;
  if (s.Get("factor") == nullptr) {
    return Status::Corrupt(origin + ": llama3 rope scaling needs \"factor\"");
  }
  TROUPE_RETURN_IF_ERROR(s.Float("factor", &r.factor, 1.0f));
  TROUPE_RETURN_IF_ERROR(s.Float("low_freq_factor", &r.low_freq_factor, 1.0f));
  TROUPE_RETURN_IF_ERROR(s.Float("high_freq_factor", &r.high_freq_factor, 4.0f));
  const int64_t default_original = 8192;
  TROUPE_RETURN_IF_ERROR(s.Dim("original_max_position_embeddings", &r.original_max_positions, &default_original));
  if (!(r.factor > 0) || !(r.low_freq_factor > 0) || !(r.high_freq_factor > r.low_freq_factor)) {
    return Status::InvalidArgument(origin +
                                   ": llama3 rope scaling needs factor > 0 and "
                                   "high_freq_factor > low_freq_factor > 0");
  }
  return Status::Ok();
}

Result<ModelConfig> ConfigFromJson(const Json& j, const std::string& origin) {
  TROUPE_ASSIGN_OR_RETURN(const Family family, ReadFamily(j, origin));
  const ConfigFields f(j, origin);
  ModelConfig c;
  c.architecture = "llama";
  c.rope_style = RopeStyle::kHalves;
  TROUPE_RETURN_IF_ERROR(f.String("_name_or_path", &c.name, ""));

  std::string act;
  TROUPE_RETURN_IF_ERROR(f.String("hidden_act", &act, "silu"));
  if (act != "silu") {
    return Status::Unsupported(origin + ": hidden_act '" + act + "' is not supported (only silu)");
  }
  bool mlp_bias = false;
  TROUPE_RETURN_IF_ERROR(f.Bool("mlp_bias", &mlp_bias, false));
  if (mlp_bias) return Status::Unsupported(origin + ": mlp_bias=true is not supported");

  TROUPE_RETURN_IF_ERROR(f.Dim("hidden_size", &c.hidden));
  TROUPE_RETURN_IF_ERROR(f.Dim("num_hidden_layers", &c.n_layers));
  TROUPE_RETURN_IF_ERROR(f.Dim("num_attention_heads", &c.n_heads));
  TROUPE_RETURN_IF_ERROR(f.Dim("num_key_value_heads", &c.n_kv_heads, &c.n_heads));
  const int64_t default_head_dim = c.hidden / c.n_heads;
  TROUPE_RETURN_IF_ERROR(f.Dim("head_dim", &c.head_dim, &default_head_dim));
  TROUPE_RETURN_IF_ERROR(f.Dim("intermediate_size", &c.intermediate));
  TROUPE_RETURN_IF_ERROR(f.Dim("vocab_size", &c.vocab));
  TROUPE_RETURN_IF_ERROR(f.Dim("max_position_embeddings", &c.max_positions));
  TROUPE_RETURN_IF_ERROR(f.Float("rms_norm_eps", &c.rms_eps, 1e-6f));
  TROUPE_RETURN_IF_ERROR(f.Bool("tie_word_embeddings", &c.tied_embeddings, false));
  TROUPE_RETURN_IF_ERROR(ReadRope(j, origin, &c));

  bool attention_bias = false;
  TROUPE_RETURN_IF_ERROR(f.Bool("attention_bias", &attention_bias, false));
  c.qkv_bias = family == Family::kQwen2 || attention_bias;

  // A sliding window wider than the context changes nothing; a narrower one
  // is honoured by never attending past it.
  bool windowed = family == Family::kMistral;
  if (family == Family::kQwen2) {
    TROUPE_RETURN_IF_ERROR(f.Bool("use_sliding_window", &windowed, false));
  }
  if (windowed && f.Get("sliding_window") != nullptr) {
    int64_t window = 0;
    TROUPE_RETURN_IF_ERROR(f.Dim("sliding_window", &window));
    c.max_positions = std::min(c.max_positions, window);
  }

  const std::string invalid = c.Validate();
  if (!invalid.empty()) return Status::InvalidArgument(origin + ": " + invalid);
  return c;
}

// --------------------------------------------------------------- weights

Status ReadTextFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    std::error_code ec;
    if (!fs::exists(path, ec)) return Status::NotFound(path + ": no such file");
    return Status::IoError(path + ": cannot read: " + std::strerror(err));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Status::IoError(path + ": read failed");
  *out = buffer.str();
  return Status::Ok();
}

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// A shard name from an index must be a plain file name inside the folder.
bool IsPlainFileName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

using HfTensors = std::map<std::string, const TensorView*>;  // HF name -> view

// Opens the shards named by `index_path`, checking that each weight_map entry
// is held by the shard it names and that no tensor appears twice.
Status OpenShards(const fs::path& dir, const std::string& index_path,
                  std::vector<std::unique_ptr<SafetensorsFile>>* files, HfTensors* tensors) {
  std::string text;
  TROUPE_RETURN_IF_ERROR(ReadTextFile(index_path, &text));
  const Json index = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object()) {
    return Status::Corrupt(index_path + ": not a JSON object");
  }
  const auto map_it = index.find("weight_map");
  if (map_it == index.end() || !map_it->is_object() || map_it->empty()) {
    return Status::Corrupt(index_path + ": missing or empty \"weight_map\"");
  }
  std::map<std::string, std::string> weight_map;  // tensor -> shard file
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : map_it->items()) {
    if (!shard.is_string() || !IsPlainFileName(shard.get<std::string>())) {
      return Status::Corrupt(index_path + ": tensor '" + tensor +
                             "' maps to something other than a file name in the folder");
    }
    weight_map[tensor] = shard.get<std::string>();
    shards.insert(shard.get<std::string>());
  }
  std::map<std::string, const SafetensorsFile*> by_name;
  for (const std::string& shard : shards) {
    TROUPE_ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open((dir / shard).string()));
    for (const std::string& name : file->names()) {
      if (!tensors->emplace(name, file->Find(name)).second) {
        return Status::Corrupt(file->path() + ": tensor '" + name + "' is also stored in another shard");
      }
    }
    by_name[shard] = file.get();
    files->push_back(std::move(file));
  }
  for (const auto& [tensor, shard] : weight_map) {
    if (by_name.at(shard)->Find(tensor) == nullptr) {
      return Status::Corrupt(index_path + ": tensor '" + tensor + "' is listed in " + shard +
                             ", which does not hold it");
    }
  }
  return Status::Ok();
}

Status OpenWeights(const fs::path& dir, std::vector<std::unique_ptr<SafetensorsFile>>* files, HfTensors* tensors) {
  const fs::path single = dir / "model.safetensors";
  const fs::path index = dir / "model.safetensors.index.json";
  if (IsFile(single)) {
    TROUPE_ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(single.string()));
    for (const std::string& name : file->names()) (*tensors)[name] = file->Find(name);
    files->push_back(std::move(file));
    return Status::Ok();
  }
  if (IsFile(index)) return OpenShards(dir, index.string(), files, tensors);
  return Status::NotFound(dir.string() + ": no model.safetensors or model.safetensors.index.json");
}

struct ExpectedTensor {
  std::string name;            // GGUF name
  std::string hf_name;         // name in the checkpoint
  std::vector<int64_t> shape;  // torch order
};

// Every tensor a Llama-family decoder with config `c` needs, in file order.
std::vector<ExpectedTensor> ExpectedTensors(const ModelConfig& c) {
  const int64_t q_rows = c.n_heads * c.head_dim;
  const int64_t kv_rows = c.n_kv_heads * c.head_dim;
  std::vector<ExpectedTensor> out;
  out.push_back({"token_embd.weight", "model.embed_tokens.weight", {c.vocab, c.hidden}});
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string blk = "blk." + std::to_string(i) + ".";
    const std::string hf = "model.layers." + std::to_string(i) + ".";
    auto add = [&](const char* gguf, const char* hf_suffix, std::vector<int64_t> shape) {
      out.push_back({blk + gguf, hf + hf_suffix, std::move(shape)});
    };
    add("attn_norm.weight", "input_layernorm.weight", {c.hidden});
    add("attn_q.weight", "self_attn.q_proj.weight", {q_rows, c.hidden});
    add("attn_k.weight", "self_attn.k_proj.weight", {kv_rows, c.hidden});
    add("attn_v.weight", "self_attn.v_proj.weight", {kv_rows, c.hidden});
    if (c.qkv_bias) {
      add("attn_q.bias", "self_attn.q_proj.bias", {q_rows});
      add("attn_k.bias", "self_attn.k_proj.bias", {kv_rows});
      add("attn_v.bias", "self_attn.v_proj.bias", {kv_rows});
    }
    add("attn_output.weight", "self_attn.o_proj.weight", {c.hidden, q_rows});
    add("ffn_norm.weight", "post_attention_layernorm.weight", {c.hidden});
    add("ffn_gate.weight", "mlp.gate_proj.weight", {c.intermediate, c.hidden});
    add("ffn_up.weight", "mlp.up_proj.weight", {c.intermediate, c.hidden});
    add("ffn_down.weight", "mlp.down_proj.weight", {c.hidden, c.intermediate});
  }
  out.push_back({"output_norm.weight", "model.norm.weight", {c.hidden}});
  if (!c.tied_embeddings) out.push_back({"output.weight", "lm_head.weight", {c.vocab, c.hidden}});
  return out;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Result<ModelConfig> ParseHfConfig(const std::string& json_text, const std::string& origin) {
  Json j;
  try {
    j = Json::parse(json_text);
  } catch (const std::exception& e) {
    return Status::Corrupt(origin + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) return Status::Corrupt(origin + ": not a JSON object");
  try {
    return ConfigFromJson(j, origin);
  } catch (const std::exception& e) {  // a JSON accessor we did not guard: never escape
    return Status::Internal(origin + ": reading the config failed: " + e.what());
  }
}

Result<std::unique_ptr<HfCheckpoint>> HfCheckpoint::Open(const std::string& dir) {
  const fs::path root(dir);
  const std::string config_path = (root / "config.json").string();
  std::string text;
  TROUPE_RETURN_IF_ERROR(ReadTextFile(config_path, &text));
  TROUPE_ASSIGN_OR_RETURN(ModelConfig config, ParseHfConfig(text, config_path));
  if (config.name.empty()) {  // "a/b" and "a/b/" are both called "b"
    config.name = (root.filename().empty() ? root.parent_path() : root).filename().string();
  }

  std::unique_ptr<HfCheckpoint> ckpt(new HfCheckpoint());
  ckpt->dir_ = dir;
  HfTensors hf;
  try {
    TROUPE_RETURN_IF_ERROR(OpenWeights(root, &ckpt->files_, &hf));
  } catch (const std::exception& e) {  // filesystem or JSON surprises: never escape
    return Status::Internal(dir + ": opening the weights failed: " + e.what());
  }
  if (hf.count("lm_head.weight") == 0) config.tied_embeddings = true;

  for (const auto& [hf_name, view] : hf) {
    if (EndsWith(hf_name, "self_attn.o_proj.bias")) {
      return Status::Unsupported(dir + ": tensor '" + hf_name + "': a bias on the attention output is not supported");
    }
  }
  // Expose exactly the tensors the config implies; ignore the rest.
  for (const ExpectedTensor& want : ExpectedTensors(config)) {
    const auto it = hf.find(want.hf_name);
    if (it == hf.end()) {
      return Status::NotFound(dir + ": missing tensor '" + want.hf_name + "' (" + want.name +
                              ") that the config implies");
    }
    if (it->second->shape != want.shape) {
      return Status::Corrupt(dir + ": tensor '" + want.hf_name + "' (" + want.name + ") has shape " +
                             ShapeString(it->second->shape) + "; the config implies " + ShapeString(want.shape));
    }
    TensorView view = *it->second;
    view.name = want.name;
    ckpt->tensors_.emplace(want.name, std::move(view));
  }
  ckpt->config_ = std::move(config);
  return ckpt;
}

const TensorView* HfCheckpoint::Find(const std::string& gguf_name) const {
  const auto it = tensors_.find(gguf_name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::vector<std::string> HfCheckpoint::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [name, view] : tensors_) out.push_back(name);
  return out;
}

}  // namespace troupe

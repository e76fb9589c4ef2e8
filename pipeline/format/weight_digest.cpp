#include "pipeline/format/weight_digest.h"

#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "pipeline/format/layer_tensors.h"
#include "pipeline/format/mapped_file.h"

namespace troupe {
namespace {

namespace fs = std::filesystem;

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// What identifies the file's contents for the cache; empty for folders.
std::string FileStamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  return std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ino);
}

// Cache files to try, in order: beside the model, then the user's cache.
std::vector<std::string> CachePaths(const std::string& model) {
  const std::string abs = fs::absolute(model).lexically_normal().string();
  std::vector<std::string> out = {abs + ".troupe-digests.json"};
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    base = x;
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    base = std::string(h) + "/.cache";
  }
  if (!base.empty()) out.push_back(base + "/troupe/digests/" + Hex(XXH3_64bits(abs.data(), abs.size())) + ".json");
  return out;
}

// Layer digests cached for this stamp (none when the cache is absent, stale or unreadable).
std::map<int64_t, uint64_t> ReadCache(const std::string& path, const std::string& stamp) {
  std::map<int64_t, uint64_t> out;
  std::ifstream in(path);
  if (!in) return out;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("stamp", "") != stamp || !j.contains("layers") || !j["layers"].is_object()) return out;
  for (const auto& [layer, digest] : j["layers"].items()) {
    if (!digest.is_string()) continue;
    char* end = nullptr;
    const long long l = std::strtoll(layer.c_str(), &end, 10);
    if (*end != '\0' || l < 0) continue;
    out[l] = std::strtoull(digest.get<std::string>().c_str(), nullptr, 16);
  }
  return out;
}

bool WriteCache(const std::string& path, const std::string& stamp, const std::map<int64_t, uint64_t>& layers) {
  nlohmann::json j;
  j["stamp"] = stamp;
  j["layers"] = nlohmann::json::object();
  for (const auto& [layer, digest] : layers) j["layers"][std::to_string(layer)] = Hex(digest);
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    if (!out) return false;
    out << j.dump() << "\n";
    if (!out) return false;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

// The layer's digest; with `release`, each tensor's pages are handed back
// once hashed.
uint64_t DigestLayer(const ModelSource& source, const std::vector<std::string>& names, bool release) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (const std::string& name : names) {
    const TensorView* t = source.Find(name);
    XXH3_64bits_update(state, name.data(), name.size() + 1);  // with its NUL: names cannot run together
    if (t && t->data) {
      XXH3_64bits_update(state, t->data, t->n_bytes);
      if (release) ReleasePages(t->data, t->n_bytes);
    }
  }
  const uint64_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return h;
}

}  // namespace

Result<LayerDigests> LayerDigests::Compute(const ModelSource& source, int64_t begin, int64_t end, int64_t serve_begin,
                                           int64_t serve_end) {
  const int64_t n = source.config().n_layers;
  if (begin < 0 || begin > end || end > n) {
    return Status::InvalidArgument("layers " + std::to_string(begin) + "-" + std::to_string(end) + " of a model with " +
                                   std::to_string(n) + " layers");
  }
  const std::string stamp = FileStamp(source.path());
  const std::vector<std::string> caches = stamp.empty() ? std::vector<std::string>() : CachePaths(source.path());
  std::map<int64_t, uint64_t> cached;
  for (const std::string& c : caches) {
    cached = ReadCache(c, stamp);
    if (!cached.empty()) break;
  }
  LayerDigests d;
  bool computed = false;
  std::vector<std::vector<std::string>> tensors;
  for (int64_t l = begin; l < end; ++l) {
    if (auto it = cached.find(l); it != cached.end()) {
      d.layers_[l] = it->second;
      continue;
    }
    if (tensors.empty()) tensors = LayerTensors(source);
    const bool served = l >= serve_begin && l < serve_end;
    d.layers_[l] = cached[l] = DigestLayer(source, tensors[l], /*release=*/!served);
    computed = true;
  }
  if (computed) {
    for (const std::string& c : caches) {
      if (WriteCache(c, stamp, cached)) break;  // best effort: no cache only costs time
    }
  }
  return d;
}

std::string LayerDigests::Span(int64_t begin, int64_t end) const {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (int64_t l = begin; l < end; ++l) {
    auto it = layers_.find(l);
    if (it == layers_.end()) {
      XXH3_freeState(state);
      return "";
    }
    const uint64_t parts[2] = {static_cast<uint64_t>(l), it->second};
    XXH3_64bits_update(state, parts, sizeof(parts));
  }
  const uint64_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return Hex(h);
}

}  // namespace troupe

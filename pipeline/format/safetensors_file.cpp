#include "pipeline/format/safetensors_file.h"

#include <cstdint>
#include <filesystem>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

namespace troupe {
namespace {

using Json = nlohmann::json;

// The reference implementation refuses headers above 100 MB; so do we.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DtypeInfo {
  GgmlType type;
  uint64_t element_bytes;
};

// Maps a safetensors dtype string to the GgmlType Troupe reads it as.
bool LookupDtype(const std::string& dtype, DtypeInfo* info) {
  if (dtype == "F32")
    *info = {GgmlType::F32, 4};
  else if (dtype == "F16")
    *info = {GgmlType::F16, 2};
  else if (dtype == "BF16")
    *info = {GgmlType::BF16, 2};
  else
    return false;
  return true;
}

uint64_t ReadLe64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Reads a JSON array of non-negative integers; false if `j` is anything else.
bool ReadUnsignedArray(const Json& j, std::vector<uint64_t>* out) {
  if (!j.is_array()) return false;
  out->clear();
  out->reserve(j.size());
  for (const Json& v : j) {
    if (!v.is_number_unsigned()) return false;
    out->push_back(v.get<uint64_t>());
  }
  return true;
}

std::string ShapeString(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::NotFound(path + ": no such file");
  TROUPE_ASSIGN_OR_RETURN(auto map, MappedFile::Open(path));
  if (map->size() < 8) {
    return Status::Corrupt(path + ": file is " + std::to_string(map->size()) +
                           " bytes, too short for the 8-byte header length");
  }
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile(std::move(map)));
  TROUPE_RETURN_IF_ERROR(file->ParseHeader());
  return file;
}

Status SafetensorsFile::ParseHeader() {
  const std::string& path = map_->path();
  const uint8_t* base = map_->data();
  const size_t map_size = map_->size();
  const uint64_t header_len = ReadLe64(base);
  if (header_len > map_size - 8) {
    return Status::Corrupt(path + ": header length " + std::to_string(header_len) + " runs past the end of the file (" +
                           std::to_string(map_size) + " bytes)");
  }
  if (header_len > kMaxHeaderBytes) {
    return Status::Corrupt(path + ": header length " + std::to_string(header_len) + " exceeds the " +
                           std::to_string(kMaxHeaderBytes) + "-byte limit");
  }
  const char* json_begin = reinterpret_cast<const char*>(base + 8);
  const uint8_t* data = base + 8 + header_len;
  const uint64_t data_size = map_size - 8 - header_len;

  Json header;
  try {
    header = Json::parse(json_begin, json_begin + header_len);
  } catch (const std::exception& e) {
    return Status::Corrupt(path + ": header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) {
    return Status::Corrupt(path + ": header is not a JSON object");
  }
  try {
    return AddTensors(header, data, data_size);
  } catch (const std::exception& e) {  // nlohmann type errors or bad_alloc: never escape
    return Status::Internal(path + ": reading the header failed: " + e.what());
  }
}

Status SafetensorsFile::AddTensors(const nlohmann::json& header, const uint8_t* data, uint64_t data_size) {
  const std::string& path = map_->path();
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string where = path + ": tensor '" + name + "'";
    if (!entry.is_object()) return Status::Corrupt(where + ": entry is not a JSON object");

    const auto dtype_it = entry.find("dtype");
    if (dtype_it == entry.end() || !dtype_it->is_string()) {
      return Status::Corrupt(where + ": missing or non-string \"dtype\"");
    }
    const std::string& dtype = dtype_it->get_ref<const std::string&>();
    DtypeInfo info{};
    if (!LookupDtype(dtype, &info)) {
      return Status::Unsupported(where + " has dtype " + dtype + "; Troupe reads F32, F16 and BF16 safetensors");
    }

    std::vector<uint64_t> shape;
    const auto shape_it = entry.find("shape");
    if (shape_it == entry.end() || !ReadUnsignedArray(*shape_it, &shape)) {
      return Status::Corrupt(where + ": \"shape\" must be an array of non-negative integers");
    }
    std::vector<uint64_t> offsets;
    const auto offsets_it = entry.find("data_offsets");
    if (offsets_it == entry.end() || !ReadUnsignedArray(*offsets_it, &offsets) || offsets.size() != 2) {
      return Status::Corrupt(where + ": \"data_offsets\" must be [begin, end] (non-negative)");
    }

    uint64_t numel = 1;
    for (uint64_t d : shape) {
      // Each dimension too, not only the product: after a 0 the product stays
      // 0, and a dimension past INT64_MAX would be negative in the view.
      if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) || __builtin_mul_overflow(numel, d, &numel) ||
          numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Status::Corrupt(where + ": shape " + ShapeString(shape) + " overflows");
      }
    }
    uint64_t n_bytes = 0;
    if (__builtin_mul_overflow(numel, info.element_bytes, &n_bytes)) {
      return Status::Corrupt(where + ": shape " + ShapeString(shape) + " overflows");
    }
    const uint64_t begin = offsets[0];
    const uint64_t end = offsets[1];
    if (begin > end) {
      return Status::Corrupt(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                             "] end before they begin");
    }
    if (end > data_size) {
      return Status::Corrupt(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                             "] run past the data section (" + std::to_string(data_size) + " bytes)");
    }
    if (end - begin != n_bytes) {
      return Status::Corrupt(where + ": holds " + std::to_string(end - begin) + " bytes but " + dtype + " " +
                             ShapeString(shape) + " needs " + std::to_string(n_bytes));
    }

    TensorView view;
    view.name = name;
    view.type = info.type;
    view.shape.assign(shape.begin(), shape.end());
    view.data = data + begin;
    view.n_bytes = static_cast<size_t>(n_bytes);
    tensors_.emplace(name, std::move(view));
  }
  return Status::Ok();
}

const TensorView* SafetensorsFile::Find(const std::string& name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [name, view] : tensors_) out.push_back(name);
  return out;
}

}  // namespace troupe

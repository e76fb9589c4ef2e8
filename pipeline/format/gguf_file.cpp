#include "pipeline/format/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace troupe {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr uint32_t kMaxDims = 4;
constexpr int kMaxNesting = 4;
// Every metadata value costs a GgufValue in memory (~100 bytes) however small
// it is on disk; cap the total so a small hostile file cannot demand gigabytes.
// Real vocabularies are far below this (Llama-3: 128k tokens + 280k merges).
constexpr uint64_t kMaxMetadataValues = uint64_t{1} << 23;

// Bounds-checked little-endian cursor over the mapping. Every read checks the
// remaining length first; a failed read leaves a message in `error`.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  template <class T>
  bool Read(T* out, const char* what) {
    if (remaining() < sizeof(T)) return Fail(std::string("truncated while reading ") + what);
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool ReadString(std::string* out, const char* what) {
    uint64_t n = 0;
    if (!Read(&n, what)) return false;
    if (n > remaining())
      return Fail(std::string(what) + " of length " + std::to_string(n) + " runs past the end of the file");
    out->assign(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return true;
  }
  bool Fail(std::string message) {
    if (error.empty()) error = std::move(message);
    return false;
  }
  std::string error;
  uint64_t values_left = kMaxMetadataValues;

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Smallest encoded size of one value of `type` (to bound array counts).
size_t MinEncodedSize(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kBool: return 1;
    case GgufValueType::kU16:
    case GgufValueType::kI16: return 2;
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32: return 4;
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64: return 8;
    case GgufValueType::kString: return 8;
    case GgufValueType::kArray: return 12;
  }
  return 1;
}

bool ValidValueType(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::kF64); }

bool ReadValue(Cursor& c, GgufValueType type, GgufValue* v, int depth);

template <class T>
bool ReadInt(Cursor& c, GgufValue* v) {
  T x;
  if (!c.Read(&x, "a metadata value")) return false;
  v->i = static_cast<int64_t>(x);
  v->u = static_cast<uint64_t>(x);
  return true;
}

bool ReadValue(Cursor& c, GgufValueType type, GgufValue* v, int depth) {
  v->type = type;
  switch (type) {
    case GgufValueType::kU8: return ReadInt<uint8_t>(c, v);
    case GgufValueType::kI8: return ReadInt<int8_t>(c, v);
    case GgufValueType::kU16: return ReadInt<uint16_t>(c, v);
    case GgufValueType::kI16: return ReadInt<int16_t>(c, v);
    case GgufValueType::kU32: return ReadInt<uint32_t>(c, v);
    case GgufValueType::kI32: return ReadInt<int32_t>(c, v);
    case GgufValueType::kU64: return ReadInt<uint64_t>(c, v);
    case GgufValueType::kI64: return ReadInt<int64_t>(c, v);
    case GgufValueType::kF32: {
      float x;
      if (!c.Read(&x, "a metadata value")) return false;
      v->f = x;
      return true;
    }
    case GgufValueType::kF64: return c.Read(&v->f, "a metadata value");
    case GgufValueType::kBool: {
      uint8_t x;
      if (!c.Read(&x, "a metadata value")) return false;
      if (x > 1) return c.Fail("boolean metadata value " + std::to_string(x) + " is neither 0 nor 1");
      v->b = x != 0;
      return true;
    }
    case GgufValueType::kString: return c.ReadString(&v->s, "a metadata string");
    case GgufValueType::kArray: {
      if (depth >= kMaxNesting) return c.Fail("metadata arrays nested too deeply");
      uint32_t et = 0;
      uint64_t n = 0;
      if (!c.Read(&et, "an array element type") || !c.Read(&n, "an array length")) return false;
      if (!ValidValueType(et)) return c.Fail("unknown array element type " + std::to_string(et));
      v->elem_type = static_cast<GgufValueType>(et);
      if (n > c.remaining() / MinEncodedSize(v->elem_type))
        return c.Fail("array of " + std::to_string(n) + " elements is larger than the file");
      if (n > c.values_left)
        return c.Fail("metadata holds more than " + std::to_string(kMaxMetadataValues) + " values in all");
      c.values_left -= n;
      v->items.resize(n);
      for (uint64_t k = 0; k < n; ++k)
        if (!ReadValue(c, v->elem_type, &v->items[k], depth + 1)) return false;
      return true;
    }
  }
  return c.Fail("unknown metadata value type");
}

bool MulOverflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

}  // namespace

bool GgufValue::is_integer() const { return IsIntegerType(type); }

bool IsIntegerType(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kU16:
    case GgufValueType::kI16:
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kU64:
    case GgufValueType::kI64: return true;
    default: return false;
  }
}

Result<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  TROUPE_ASSIGN_OR_RETURN(auto mapped, MappedFile::Open(path));
  std::unique_ptr<GgufFile> g(new GgufFile());
  Cursor c(mapped->data(), mapped->size());
  auto corrupt = [&](const std::string& what) { return Status::Corrupt(path + ": " + what); };

  uint32_t magic = 0;
  if (!c.Read(&magic, "the magic number")) return corrupt("not a GGUF file (shorter than its header)");
  if (magic != kMagic) return corrupt("not a GGUF file (wrong magic number)");
  if (!c.Read(&g->version_, "the version")) return corrupt(c.error);
  if (g->version_ != 2 && g->version_ != 3)
    return Status::Unsupported(path + ": GGUF version " + std::to_string(g->version_) +
                               " is not supported (expected 2 or 3)");
  uint64_t n_tensors = 0, n_kv = 0;
  if (!c.Read(&n_tensors, "the tensor count") || !c.Read(&n_kv, "the metadata count")) return corrupt(c.error);
  if (n_kv > c.remaining() / 12) return corrupt("metadata count " + std::to_string(n_kv) + " is larger than the file");
  if (n_tensors > c.remaining() / 24)
    return corrupt("tensor count " + std::to_string(n_tensors) + " is larger than the file");

  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key;
    uint32_t type = 0;
    if (!c.ReadString(&key, "a metadata key") || !c.Read(&type, "a metadata type")) return corrupt(c.error);
    if (!ValidValueType(type))
      return corrupt("metadata key '" + key + "' has unknown value type " + std::to_string(type));
    GgufValue v;
    if (!ReadValue(c, static_cast<GgufValueType>(type), &v, 0))
      return corrupt("metadata key '" + key + "': " + c.error);
    if (g->metadata_.count(key)) return corrupt("metadata key '" + key + "' appears twice");
    g->metadata_.emplace(std::move(key), std::move(v));
  }
  if (const GgufValue* a = g->Find("general.alignment")) {
    if (!a->is_integer() || a->i <= 0 || (a->i & (a->i - 1)) != 0 || a->i > (1 << 20))
      return corrupt("general.alignment must be a power of two");
    g->alignment_ = static_cast<uint64_t>(a->i);
  }

  struct RawInfo {
    uint64_t offset;
  };
  std::vector<RawInfo> raw(n_tensors);
  g->tensors_.resize(n_tensors);
  for (uint64_t t = 0; t < n_tensors; ++t) {
    TensorView& tv = g->tensors_[t];
    uint32_t n_dims = 0, type = 0;
    if (!c.ReadString(&tv.name, "a tensor name") || !c.Read(&n_dims, "a tensor rank")) return corrupt(c.error);
    if (n_dims == 0 || n_dims > kMaxDims)
      return corrupt("tensor '" + tv.name + "' has rank " + std::to_string(n_dims) + " (must be 1.." +
                     std::to_string(kMaxDims) + ")");
    std::vector<uint64_t> dims(n_dims);
    uint64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      if (!c.Read(&dims[d], "a tensor dimension")) return corrupt(c.error);
      if (dims[d] == 0) return corrupt("tensor '" + tv.name + "' has a zero dimension");
      if (dims[d] > (uint64_t{1} << 40) || MulOverflows(numel, dims[d], &numel) || numel > (uint64_t{1} << 48))
        return corrupt("tensor '" + tv.name + "' has too many elements (dimension " + std::to_string(dims[d]) +
                       " makes the product of its dimensions overflow)");
    }
    if (!c.Read(&type, "a tensor type") || !c.Read(&raw[t].offset, "a tensor offset")) return corrupt(c.error);
    if (!ggml_type_supported(type))
      return Status::Unsupported(path + ": tensor '" + tv.name + "' has type " + std::to_string(type) +
                                 ", which Troupe cannot decode (supported: F32, F16, BF16, Q4_0, Q4_1, "
                                 "Q5_0, Q8_0, Q4_K, Q5_K, Q6_K)");
    tv.type = static_cast<GgmlType>(type);
    const auto bv = static_cast<uint64_t>(ggml_block_values(tv.type));
    if (dims[0] % bv != 0)
      return corrupt("tensor '" + tv.name + "' of type " + ggml_type_name(tv.type) + " has a row of " +
                     std::to_string(dims[0]) + " values, not a multiple of its block size " + std::to_string(bv));
    tv.n_bytes = (numel / bv) * static_cast<uint64_t>(ggml_block_bytes(tv.type));
    tv.shape.assign(dims.rbegin(), dims.rend());
    if (g->tensor_index_.count(tv.name)) return corrupt("tensor '" + tv.name + "' appears twice");
    g->tensor_index_[tv.name] = t;
  }

  const uint64_t data_start = (c.pos() + g->alignment_ - 1) / g->alignment_ * g->alignment_;
  const uint64_t size = mapped->size();
  for (uint64_t t = 0; t < n_tensors; ++t) {
    TensorView& tv = g->tensors_[t];
    const uint64_t off = raw[t].offset;
    if (off % g->alignment_ != 0)
      return corrupt("tensor '" + tv.name + "' offset " + std::to_string(off) + " is not aligned to " +
                     std::to_string(g->alignment_));
    if (data_start > size || off > size - data_start || tv.n_bytes > size - data_start - off)
      return corrupt("tensor '" + tv.name + "' data (offset " + std::to_string(off) + ", " +
                     std::to_string(tv.n_bytes) + " bytes) runs past the end of the file (truncated?)");
    tv.data = mapped->data() + data_start + off;
  }
  g->header_size_ = std::min<uint64_t>(data_start, size);
  g->file_ = std::move(mapped);
  return g;
}

const GgufValue* GgufFile::Find(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

Result<int64_t> GgufFile::GetInt(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v) return Status::NotFound(path() + ": metadata key '" + key + "' is missing");
  if (!v->is_integer()) return Status::InvalidArgument(path() + ": metadata key '" + key + "' is not an integer");
  if (v->type == GgufValueType::kU64 && v->u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return Status::OutOfRange(path() + ": metadata key '" + key + "' is too large");
  return v->i;
}

Result<double> GgufFile::GetFloat(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v) return Status::NotFound(path() + ": metadata key '" + key + "' is missing");
  if (v->is_float()) return v->f;
  if (v->is_integer()) return static_cast<double>(v->i);
  return Status::InvalidArgument(path() + ": metadata key '" + key + "' is not a number");
}

Result<std::string> GgufFile::GetString(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v) return Status::NotFound(path() + ": metadata key '" + key + "' is missing");
  if (v->type != GgufValueType::kString)
    return Status::InvalidArgument(path() + ": metadata key '" + key + "' is not a string");
  return v->s;
}

Result<bool> GgufFile::GetBool(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v) return Status::NotFound(path() + ": metadata key '" + key + "' is missing");
  if (v->type != GgufValueType::kBool)
    return Status::InvalidArgument(path() + ": metadata key '" + key + "' is not a boolean");
  return v->b;
}

Result<std::vector<std::string>> GgufFile::GetStringArray(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v) return Status::NotFound(path() + ": metadata key '" + key + "' is missing");
  if (v->type != GgufValueType::kArray || v->elem_type != GgufValueType::kString)
    return Status::InvalidArgument(path() + ": metadata key '" + key + "' is not an array of strings");
  std::vector<std::string> out;
  out.reserve(v->items.size());
  for (const auto& item : v->items) out.push_back(item.s);
  return out;
}

Result<std::vector<int64_t>> GgufFile::GetIntArray(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v) return Status::NotFound(path() + ": metadata key '" + key + "' is missing");
  if (v->type != GgufValueType::kArray || !IsIntegerType(v->elem_type))
    return Status::InvalidArgument(path() + ": metadata key '" + key + "' is not an array of integers");
  std::vector<int64_t> out;
  out.reserve(v->items.size());
  for (const auto& item : v->items) out.push_back(item.i);
  return out;
}

Result<std::vector<double>> GgufFile::GetFloatArray(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v) return Status::NotFound(path() + ": metadata key '" + key + "' is missing");
  const bool is_float = v->elem_type == GgufValueType::kF32 || v->elem_type == GgufValueType::kF64;
  if (v->type != GgufValueType::kArray || !(is_float || IsIntegerType(v->elem_type)))
    return Status::InvalidArgument(path() + ": metadata key '" + key + "' is not an array of numbers");
  std::vector<double> out;
  out.reserve(v->items.size());
  for (const auto& item : v->items) out.push_back(is_float ? item.f : static_cast<double>(item.i));
  return out;
}

const TensorView* GgufFile::FindTensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace troupe

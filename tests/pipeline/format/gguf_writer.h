// GgufWriter: a test stand-in that writes GGUF files byte by byte, so the
// reader can be fed exact, hand-built, and deliberately broken files.
//
// Test-only. It is not a GGUF writer for the engine: it checks nothing, lets a
// test put any count, type code, offset or length on disk, and lays out tensor
// data exactly as given. Also here: ScratchDir, a unique temporary folder per
// test, removed with everything in it when it goes out of scope.
//
// Layout produced by GgufWriter::Build():
//   "GGUF" u32 version, u64 tensor_count, u64 kv_count,
//   kv_count x (string key, u32 value type, value),
//   tensor_count x (string name, u32 n_dims, u64 dims[n_dims], u32 type, u64 offset),
//   zero padding to `alignment`, then each tensor's bytes at its offset
//   (offsets assigned in order, each rounded up to `alignment`). No padding
//   after the last tensor, so every proper prefix of the file is truncated.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace troupe {
namespace gguf_test {

// GGUF metadata value type codes.
enum : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// Little-endian byte appender (the test machines are little-endian, as GGUF is).
class Bytes {
 public:
  template <class T>
  Bytes& Put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    data_.insert(data_.end(), p, p + sizeof(T));
    return *this;
  }
  Bytes& U8(uint8_t v) { return Put(v); }
  Bytes& U32(uint32_t v) { return Put(v); }
  Bytes& U64(uint64_t v) { return Put(v); }
  // A GGUF string: u64 length, then the bytes (no terminator).
  Bytes& Str(const std::string& s) {
    U64(s.size());
    return Raw(s.data(), s.size());
  }
  Bytes& Raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    data_.insert(data_.end(), b, b + n);
    return *this;
  }
  Bytes& Raw(const std::vector<uint8_t>& v) { return Raw(v.data(), v.size()); }
  Bytes& PadTo(uint64_t alignment) {
    while (data_.size() % alignment != 0) data_.push_back(0);
    return *this;
  }
  size_t size() const { return data_.size(); }
  const std::vector<uint8_t>& data() const { return data_; }
  std::vector<uint8_t>& data() { return data_; }

 private:
  std::vector<uint8_t> data_;
};

// One encoded metadata value: its type code and its bytes (without the code).
struct Value {
  uint32_t type;
  std::vector<uint8_t> bytes;
};

template <class T>
Value Scalar(uint32_t type, T v) {
  Bytes b;
  b.Put(v);
  return {type, b.data()};
}
inline Value U8(uint8_t v) { return Scalar(kU8, v); }
inline Value I8(int8_t v) { return Scalar(kI8, v); }
inline Value U16(uint16_t v) { return Scalar(kU16, v); }
inline Value I16(int16_t v) { return Scalar(kI16, v); }
inline Value U32(uint32_t v) { return Scalar(kU32, v); }
inline Value I32(int32_t v) { return Scalar(kI32, v); }
inline Value U64(uint64_t v) { return Scalar(kU64, v); }
inline Value I64(int64_t v) { return Scalar(kI64, v); }
inline Value F32(float v) { return Scalar(kF32, v); }
inline Value F64(double v) { return Scalar(kF64, v); }
// `raw` lets a test store a byte other than 0 or 1.
inline Value Bool(bool v) { return Scalar(kBool, static_cast<uint8_t>(v)); }
inline Value RawBool(uint8_t raw) { return Scalar(kBool, raw); }
inline Value Str(const std::string& s) {
  Bytes b;
  b.Str(s);
  return {kString, b.data()};
}
// An array: u32 element type, u64 count, then each item's bytes. Items of type
// kArray carry their own element type and count, as GGUF nests them. The
// items' own type codes are not checked against `elem_type`.
inline Value Array(uint32_t elem_type, const std::vector<Value>& items) {
  Bytes b;
  b.U32(elem_type).U64(items.size());
  for (const Value& v : items) b.Raw(v.bytes);
  return {kArray, b.data()};
}
// An array header claiming `count` items, followed by `payload` as is.
inline Value RawArray(uint32_t elem_type, uint64_t count, const std::vector<uint8_t>& payload = {}) {
  Bytes b;
  b.U32(elem_type).U64(count).Raw(payload);
  return {kArray, b.data()};
}

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> dims;      // GGUF order: dims[0] is contiguous; rank = dims.size()
  uint32_t type = 0;               // ggml type code, written as is
  std::vector<uint8_t> data;       // bytes placed in the data section
  std::optional<uint64_t> offset;  // written instead of the computed offset
};

class GgufWriter {
 public:
  GgufWriter& set_version(uint32_t v) {
    version_ = v;
    return *this;
  }
  // Alignment used to lay out the data section. Does not write
  // general.alignment; add that key yourself to tell the reader.
  GgufWriter& set_alignment(uint64_t a) {
    alignment_ = a;
    return *this;
  }
  GgufWriter& set_kv_count(uint64_t n) {
    kv_count_ = n;
    return *this;
  }  // override
  GgufWriter& set_tensor_count(uint64_t n) {
    tensor_count_ = n;
    return *this;
  }  // override

  GgufWriter& Kv(const std::string& key, const Value& v) {
    kvs_.emplace_back(key, v);
    return *this;
  }
  // Writes the key with a type code other than v's own (unknown types etc.).
  GgufWriter& KvAs(const std::string& key, uint32_t type, const Value& v) {
    kvs_.emplace_back(key, Value{type, v.bytes});
    return *this;
  }
  // `offset`, when given, is written instead of the computed one.
  GgufWriter& Tensor(std::string name, std::vector<uint64_t> dims, uint32_t type, std::vector<uint8_t> data,
                     std::optional<uint64_t> offset = std::nullopt) {
    tensors_.push_back({std::move(name), std::move(dims), type, std::move(data), offset});
    return *this;
  }

  // Valid after Build(): offset of tensor i inside the data section, where the
  // tensor infos end, and where the data section starts in the file.
  uint64_t offset(size_t i) const { return offsets_.at(i); }
  uint64_t infos_end() const { return infos_end_; }
  uint64_t data_start() const { return data_start_; }

  std::vector<uint8_t> Build() {
    Bytes b;
    b.Raw("GGUF", 4).U32(version_);
    b.U64(tensor_count_ ? *tensor_count_ : tensors_.size());
    b.U64(kv_count_ ? *kv_count_ : kvs_.size());
    for (const auto& [key, v] : kvs_) b.Str(key).U32(v.type).Raw(v.bytes);
    offsets_.clear();
    uint64_t next = 0;
    for (const TensorSpec& t : tensors_) {
      next = (next + alignment_ - 1) / alignment_ * alignment_;
      offsets_.push_back(next);
      next += t.data.size();
    }
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const TensorSpec& t = tensors_[i];
      b.Str(t.name).U32(static_cast<uint32_t>(t.dims.size()));
      for (uint64_t d : t.dims) b.U64(d);
      b.U32(t.type).U64(t.offset ? *t.offset : offsets_[i]);
    }
    infos_end_ = b.size();
    if (!tensors_.empty()) b.PadTo(alignment_);
    data_start_ = b.size();
    for (size_t i = 0; i < tensors_.size(); ++i) {
      b.data().resize(data_start_ + offsets_[i], 0);
      b.Raw(tensors_[i].data);
    }
    return b.data();
  }

 private:
  uint32_t version_ = 3;
  uint64_t alignment_ = 32;
  std::optional<uint64_t> kv_count_, tensor_count_;
  std::vector<std::pair<std::string, Value>> kvs_;
  std::vector<TensorSpec> tensors_;
  std::vector<uint64_t> offsets_;
  uint64_t infos_end_ = 0;
  uint64_t data_start_ = 0;
};

// A fresh folder under $TMPDIR (or /tmp), deleted with its contents on scope exit.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/troupe_gguf_XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~ScratchDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

  // Writes `bytes` to <dir>/<name> (replacing it) and returns the full path.
  std::string Write(const std::string& name, const std::vector<uint8_t>& bytes) const {
    return Write(name, bytes.data(), bytes.size());
  }
  std::string Write(const std::string& name, const uint8_t* data, size_t n) const {
    std::string p = path_ + "/" + name;
    // Unlink rather than truncate: ext4 flushes a file truncated and rewritten
    // (auto_da_alloc), which made loops of thousands of files take seconds.
    std::error_code ec;
    std::filesystem::remove(p, ec);
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n));
    return p;
  }

 private:
  std::string path_;
};

}  // namespace gguf_test
}  // namespace troupe

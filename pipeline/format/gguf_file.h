// GgufFile: a GGUF v3 (also v2) model file, memory-mapped and parsed.
//
// Parses the header, every metadata key/value (all 13 value types, nested
// arrays included) and every tensor description, and checks each tensor's
// bytes lie inside the file, aligned, with a type Troupe can decode. Tensor
// data is not copied: TensorViews point into the mapping, valid for the
// GgufFile's lifetime.
//
// Failure: Open never crashes on hostile input; a wrong magic or version, a
// truncated file, an absurd count, an unsupported tensor type or an offset or
// size out of range gives a Status whose message names the file and the problem.
// Thread-safety: immutable after Open.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/format/mapped_file.h"
#include "pipeline/status.h"
#include "pipeline/tensor_view.h"

namespace troupe {

enum class GgufValueType : uint32_t {
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

bool IsIntegerType(GgufValueType type);

// One metadata value. Scalars: integers in `i` (u64 above INT64_MAX kept in
// `u`), floats in `f`, booleans in `b`, strings in `s`. Arrays: `elem_type` and
// the elements in `items` (one GgufValue each).
struct GgufValue {
  GgufValueType type = GgufValueType::kU8;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  bool b = false;
  std::string s;
  GgufValueType elem_type = GgufValueType::kU8;
  std::vector<GgufValue> items;

  bool is_integer() const;
  bool is_float() const { return type == GgufValueType::kF32 || type == GgufValueType::kF64; }
};

class GgufFile {
 public:
  static Result<std::unique_ptr<GgufFile>> Open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }

  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const GgufValue* Find(const std::string& key) const;
  // Typed getters: NotFound when absent, InvalidArgument when of another type.
  Result<int64_t> GetInt(const std::string& key) const;
  Result<double> GetFloat(const std::string& key) const;  // accepts integers too
  Result<std::string> GetString(const std::string& key) const;
  Result<bool> GetBool(const std::string& key) const;
  // The elements of a string array / integer array / number array key (the
  // last accepts integers too).
  Result<std::vector<std::string>> GetStringArray(const std::string& key) const;
  Result<std::vector<int64_t>> GetIntArray(const std::string& key) const;
  Result<std::vector<double>> GetFloatArray(const std::string& key) const;

  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* FindTensor(const std::string& name) const;

  // The whole mapped file, and the length of its header (magic, metadata and
  // tensor infos, up to the aligned start of tensor data). Reading the header
  // touches no weight page.
  const uint8_t* bytes() const { return file_->data(); }
  uint64_t size() const { return file_->size(); }
  uint64_t header_size() const { return header_size_; }

 private:
  GgufFile() = default;
  std::unique_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t header_size_ = 0;
  std::map<std::string, GgufValue> metadata_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

}  // namespace troupe

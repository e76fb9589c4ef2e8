// SafetensorsFile: one memory-mapped .safetensors file and the TensorViews of
// the tensors it holds.
//
// Format: u64 little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {...}}, then the data section; offsets are relative to the
// start of the data section (8 + N). "__metadata__" is ignored.
//
// Supported dtypes: F32, F16, BF16 (-> GgmlType of the same name). Any other
// dtype (I8, I64, F64, F8_E4M3, ...) fails the whole Open with kUnsupported
// naming the tensor and the dtype.
//
// Ownership: the file is mapped read-only (MAP_PRIVATE) for the lifetime of
// the object; every TensorView returned points into that mapping and is valid
// until the SafetensorsFile is destroyed.
// Thread-safety: immutable after Open; const methods may be called from any
// number of threads.
// Failure: Open never throws and never crashes on hostile input. Every error
// message starts with the file path: kNotFound (no such file), kIoError
// (open/stat/mmap refused, not a regular file),
// kCorrupt (truncated file, header length past the end, bad JSON, malformed
// entry, offsets out of range or disagreeing with dtype x shape),
// kUnsupported (dtype Troupe does not read).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "pipeline/format/mapped_file.h"
#include "pipeline/status.h"
#include "pipeline/tensor_view.h"

namespace troupe {

class SafetensorsFile {
 public:
  // Maps `path` and validates every tensor entry against the file.
  static Result<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);

  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  // The tensor named `name` as written in the file, or nullptr.
  const TensorView* Find(const std::string& name) const;
  // Every tensor name, sorted.
  std::vector<std::string> names() const;
  const std::string& path() const { return map_->path(); }

 private:
  explicit SafetensorsFile(std::unique_ptr<MappedFile> map) : map_(std::move(map)) {}
  Status ParseHeader();
  // Validates each entry of the parsed header and records its view.
  Status AddTensors(const nlohmann::json& header, const uint8_t* data, uint64_t data_size);

  std::unique_ptr<MappedFile> map_;            // the whole file
  std::map<std::string, TensorView> tensors_;  // name -> view into map_
};

}  // namespace troupe

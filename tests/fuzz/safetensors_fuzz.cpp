// libFuzzer target: a whole .safetensors file through SafetensorsFile::Open
// (written to a scratch file first: the parser maps a path, fuzz_files.h).
// Input: the file's bytes.
// Properties checked (a violation aborts): a refusal is Corrupt or
// Unsupported (never Internal: no exception may decide it) and names the
// file; in an accepted file every tensor the header lists (but
// "__metadata__") is found under its name, names() is sorted, each view is
// F32, F16 or BF16 with n_bytes = elements x element size and holds exactly
// the input bytes at 8 + header length + its data_offsets begin, its
// dimensions are not negative, and every value decodes.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/format/safetensors_file.h"
#include "pipeline/quant/qmatrix.h"
#include "tests/fuzz/fuzz_files.h"

namespace troupe::fuzz {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "safetensors_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

uint64_t ElementBytes(GgmlType type) { return type == GgmlType::F32 ? 4 : 2; }

// The accepted file's own header, read again here to know where each
// tensor's bytes should be.
void CheckViews(const SafetensorsFile& file, const uint8_t* data, size_t size) {
  uint64_t header_len = 0;
  std::memcpy(&header_len, data, 8);
  const nlohmann::json header = nlohmann::json::parse(data + 8, data + 8 + header_len);
  const uint8_t* section = data + 8 + header_len;
  const std::vector<std::string> names = file.names();
  Check(std::is_sorted(names.begin(), names.end()), "names() is sorted");
  size_t listed = 0;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    ++listed;
    const TensorView* view = file.Find(name);
    Check(view != nullptr, "every listed tensor is found");
    Check(view->name == name, "a view carries its name");
    Check(view->type == GgmlType::F32 || view->type == GgmlType::F16 || view->type == GgmlType::BF16,
          "views are F32, F16 or BF16");
    const std::vector<int64_t> shape = entry.at("shape").get<std::vector<int64_t>>();
    Check(view->shape == shape, "a view has the listed shape");
    for (int64_t d : view->shape) Check(d >= 0, "dimensions are not negative");
    uint64_t numel = 1;
    for (int64_t d : shape) numel *= static_cast<uint64_t>(d);
    Check(view->n_bytes == numel * ElementBytes(view->type), "n_bytes = elements x element size");
    const uint64_t begin = entry.at("data_offsets").at(0).get<uint64_t>();
    Check(8 + header_len + begin + view->n_bytes <= size, "a view lies inside the file");
    Check(std::memcmp(view->data, section + begin, view->n_bytes) == 0, "a view holds the bytes its offsets name");
    std::vector<float> values(numel);
    dequantize(view->type, view->data, values.data(), static_cast<int64_t>(numel));
  }
  Check(names.size() == listed, "names() lists every tensor once");
  Check(file.Find("__metadata__") == nullptr, "__metadata__ is no tensor");
}

}  // namespace
}  // namespace troupe::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  static const fuzz::ScratchFolder folder;
  const std::string path = folder.Write("model.safetensors", data, size);
  Result<std::unique_ptr<SafetensorsFile>> file = SafetensorsFile::Open(path);
  if (!file.ok()) {
    const Status& st = file.status();
    fuzz::Check(st.code() == StatusCode::kCorrupt || st.code() == StatusCode::kUnsupported,
                "a refused file is Corrupt or Unsupported");
    fuzz::Check(st.message().rfind(path + ": ", 0) == 0, "a refusal names the file");
    return 0;
  }
  fuzz::Check((*file)->path() == path, "the file keeps its path");
  fuzz::CheckViews(**file, data, size);
  return 0;
}

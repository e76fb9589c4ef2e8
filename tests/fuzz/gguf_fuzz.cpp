// libFuzzer target: a whole GGUF file through GgufFile::Open (written to a
// scratch file first: the parser maps a path, fuzz_files.h), then what the
// engine reads from it: ModelConfigFromGguf, TokenizerSpecFromGguf and the
// tokenizer that spec builds (tokenizer_check.h), ModelSource::Open, and every
// tensor dequantized. Input: the file's bytes.
// Properties checked (a violation aborts): a refusal is Corrupt or Unsupported
// and names the file; an accepted file is version 2 or 3 with a power-of-two
// alignment, and every tensor has rank 1..4, positive dimensions, a whole
// number of blocks per row, the byte count its type and shape imply, and data
// aligned inside the file after the header; names are unique and FindTensor
// finds each; the typed metadata getters agree with each value's type.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "pipeline/format/gguf_file.h"
#include "pipeline/format/model_source.h"
#include "pipeline/quant/qmatrix.h"
#include "tests/fuzz/fuzz_files.h"
#include "tests/fuzz/tokenizer_check.h"

namespace troupe::fuzz {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "gguf_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

void CheckMetadata(const GgufFile& g) {
  for (const auto& [key, v] : g.metadata()) {
    Check(g.Find(key) == &v, "Find finds every key");
    Check(g.GetInt(key).ok() == (v.is_integer() && !(v.type == GgufValueType::kU64 && v.u > INT64_MAX)),
          "GetInt succeeds exactly for integers that fit");
    Check(g.GetFloat(key).ok() == (v.is_integer() || v.is_float()), "GetFloat succeeds exactly for numbers");
    Check(g.GetString(key).ok() == (v.type == GgufValueType::kString), "GetString succeeds exactly for strings");
    Check(g.GetBool(key).ok() == (v.type == GgufValueType::kBool), "GetBool succeeds exactly for booleans");
    const bool array = v.type == GgufValueType::kArray;
    Result<std::vector<std::string>> strings = g.GetStringArray(key);
    Check(strings.ok() == (array && v.elem_type == GgufValueType::kString), "GetStringArray only for string arrays");
    if (strings.ok()) Check(strings->size() == v.items.size(), "one string per item");
    Result<std::vector<int64_t>> ints = g.GetIntArray(key);
    Check(ints.ok() == (array && IsIntegerType(v.elem_type)), "GetIntArray only for integer arrays");
    if (array) {
      for (const GgufValue& item : v.items) Check(item.type == v.elem_type, "array items have the element type");
    }
  }
  Check(!g.GetInt("no.such.key").ok(), "a missing key is not found");
}

void CheckTensors(const GgufFile& g) {
  const uint64_t alignment = g.alignment();
  Check(alignment > 0 && (alignment & (alignment - 1)) == 0, "alignment is a power of two");
  Check(g.header_size() <= g.size(), "the header lies inside the file");
  std::set<std::string> names;
  for (const TensorView& t : g.tensors()) {
    Check(names.insert(t.name).second, "tensor names are unique");
    Check(g.FindTensor(t.name) == &t, "FindTensor finds every tensor");
    Check(ggml_type_supported(static_cast<uint32_t>(t.type)), "tensor types are supported");
    Check(!t.shape.empty() && t.shape.size() <= 4, "rank 1..4");
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      Check(d > 0, "dimensions are positive");
      Check(!__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel), "the element count fits");
    }
    const int64_t block = ggml_block_values(t.type);
    Check(t.cols() % block == 0, "rows hold whole blocks");
    Check(t.n_bytes == numel / static_cast<uint64_t>(block) * static_cast<uint64_t>(ggml_block_bytes(t.type)),
          "n_bytes is what type and shape imply");
    const uint64_t begin = static_cast<uint64_t>(t.data - g.bytes());
    Check(t.data >= g.bytes() + g.header_size(), "tensor data starts after the header");
    Check(begin <= g.size() && t.n_bytes <= g.size() - begin, "tensor data lies inside the file");
    Check(begin % alignment == 0, "tensor data is aligned");
    // Every weight byte decodes (the mapping is not watched by ASan: a view
    // past the file's pages would fault here).
    std::vector<float> values(numel);
    dequantize(t.type, t.data, values.data(), static_cast<int64_t>(numel));
  }
  Check(g.FindTensor("no.such.tensor") == nullptr, "a missing tensor is not found");
}

}  // namespace
}  // namespace troupe::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  static const fuzz::ScratchFolder folder;
  const std::string path = folder.Write("model.gguf", data, size);

  Result<std::unique_ptr<GgufFile>> file = GgufFile::Open(path);
  if (!file.ok()) {
    const Status& st = file.status();
    fuzz::Check(st.code() == StatusCode::kCorrupt || st.code() == StatusCode::kUnsupported,
                "a refused file is Corrupt or Unsupported");
    fuzz::Check(fuzz::StartsWith(st.message(), path + ": "), "a refusal names the file");
    return 0;
  }
  const GgufFile& g = **file;
  fuzz::Check(g.size() == size, "the whole file is mapped");
  fuzz::Check(g.version() == 2 || g.version() == 3, "version 2 or 3");
  fuzz::CheckMetadata(g);
  fuzz::CheckTensors(g);

  Result<ModelConfig> config = ModelConfigFromGguf(g);
  if (config.ok()) fuzz::Check(config->Validate().empty(), "an accepted config is valid");
  Result<TokenizerSpec> spec = TokenizerSpecFromGguf(g);
  if (spec.ok()) fuzz::CheckTokenizerSpec(*spec);
  if (config.ok() && spec.ok()) {
    Result<std::unique_ptr<ModelSource>> source = ModelSource::Open(path);
    if (source.ok()) {
      fuzz::Check((*source)->config().vocab == static_cast<int64_t>((*source)->tokenizer_spec().tokens.size()),
                  "a model source's vocabulary matches its embedding");
      fuzz::Check(!(*source)->fingerprint().empty(), "a model source has a fingerprint");
    } else {
      fuzz::Check(fuzz::StartsWith(source.status().message(), path + ": "), "a refusal names the file");
    }
  }
  return 0;
}

// Dumps our decoder's intermediate tensors for tokens fed one at a time, to
// compare bit for bit with llama.cpp's (bench/llama_dump.py, bench/compare_dump.py).
//
// Usage: forward_dump MODEL.gguf OUT.bin TOKEN [TOKEN ...]
// With TROUPE_DUMP_LOGITS_ONLY=1 only each step's logits are written (long
// sequences, e.g. past a sliding window).
// Record format (little-endian): u32 name length, name ("<step>/<name>-<layer>"),
// i64 count, count float32 values.
#include <ATen/core/Tensor.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "pipeline/format/model_source.h"
#include "pipeline/model/decoder.h"
#include "pipeline/model/embedding.h"
#include "pipeline/model/kv_cache.h"
#include "pipeline/model/lm_head.h"

namespace {
FILE* g_out = nullptr;
int g_step = 0;

void Write(const std::string& name, const float* data, int64_t n) {
  const uint32_t len = static_cast<uint32_t>(name.size());
  std::fwrite(&len, sizeof len, 1, g_out);
  std::fwrite(name.data(), 1, len, g_out);
  std::fwrite(&n, sizeof n, 1, g_out);
  std::fwrite(data, sizeof(float), static_cast<size_t>(n), g_out);
}

void OnProbe(const char* name, int64_t layer, const float* data, int64_t n) {
  Write(std::to_string(g_step) + "/" + name + "-" + std::to_string(layer), data, n);
}
}  // namespace

int main(int argc, char** argv) {
  using namespace troupe;
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MODEL OUT TOKEN...\n", argv[0]);
    return 2;
  }
  ModelOptions options;
  options.threads = 2;
  auto source = ModelSource::Open(argv[1]);
  if (!source.ok()) return std::fprintf(stderr, "%s\n", source.status().ToString().c_str()), 1;
  auto emb = Embedding::Load(**source);
  auto dec = Decoder::Load(**source, 0, (*source)->config().n_layers, options);
  auto head = LmHead::Load(**source, options);
  if (!emb.ok() || !dec.ok() || !head.ok()) return std::fprintf(stderr, "load failed\n"), 1;
  auto cache = KvCache::Create((*dec)->cache_shape(), 1024);
  g_out = std::fopen(argv[2], "wb");
  const char* logits_only = std::getenv("TROUPE_DUMP_LOGITS_ONLY");
  if (!logits_only || std::string(logits_only) != "1") SetDecoderProbe(OnProbe);
  for (int i = 3; i < argc; ++i) {
    g_step = i - 3;
    auto h = (*emb)->Forward({std::atoi(argv[i])});
    Write(std::to_string(g_step) + "/embd", h->data_ptr<float>(), h->numel());
    std::vector<SessionRows> batch{{cache->get(), 1}};
    Status st = (*dec)->Forward(*h, batch);
    if (!st.ok()) return std::fprintf(stderr, "%s\n", st.ToString().c_str()), 1;
    auto logits = (*head)->Forward(*h);
    Write(std::to_string(g_step) + "/logits", logits->data_ptr<float>(), logits->numel());
  }
  std::fclose(g_out);
  return 0;
}

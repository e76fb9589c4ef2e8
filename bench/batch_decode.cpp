// One stage set of the ring in one process — Embedding, a Decoder over every
// layer, LmHead, greedy argmax — decoding B sessions in one batch, on any
// backend and device: what a GPU shard (or a CPU one) does per step, without
// the hops. bench/bench_torch.py runs it beside Hugging Face transformers'
// `generate` (GPU) or beside the kernels (CPU).
//
// Usage: batch_decode --model PATH [--backend B --device D --dtype T --threads N]
//          [--sessions B] [--prompt-tokens P] [--new-tokens N] [--repeat R]
// Prints one JSON line: {"backend": ..., "sessions": B, "prompt_tokens": P,
// "new_tokens": N, "prefill_tokens_per_s": X, "decode_tokens_per_s": Y,
// "peak_rss_mb": Z, "device_used_mb": U, "first_tokens": [...]} — the best of
// R timed runs after one warm-up; first_tokens are session 0's greedy tokens.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <sys/resource.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "pipeline/format/model_source.h"
#include "pipeline/model/decoder.h"
#include "pipeline/model/embedding.h"
#include "pipeline/model/kv_cache.h"
#include "pipeline/model/lm_head.h"
#include "pipeline/model/torch_device.h"

namespace {

using troupe::Status;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// next[s] = argmax of logits row s. On the CPU a plain loop: ATen's argmax
// runs an OpenMP region whose idle workers then spin for milliseconds and
// take a core from the kernels' own thread pool (a third of the run's CPU at
// 4 sessions); the engine's sampler does not use ATen either.
void Greedy(const at::Tensor& logits, std::vector<int32_t>& next) {
  if (logits.is_cuda()) {
    at::Tensor a = logits.argmax(-1).to(at::kInt).cpu();
    for (size_t s = 0; s < next.size(); ++s) next[s] = a[s].item<int32_t>();
    return;
  }
  const at::Tensor f = logits.to(at::kFloat).contiguous();
  const int64_t vocab = f.size(1);
  const float* p = f.data_ptr<float>();
  for (size_t s = 0; s < next.size(); ++s) {
    const float* row = p + static_cast<int64_t>(s) * vocab;
    next[s] = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
  }
}

[[noreturn]] void Die(const std::string& what) {
  std::cerr << "batch_decode: " << what << std::endl;
  std::exit(1);
}

void Check(const Status& st) {
  if (!st.ok()) Die(st.ToString());
}

struct Run {
  double prefill_s = 0, decode_s = 0;
  std::vector<int32_t> tokens;  // session 0's
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Decode B sessions in one batch through the whole model in this process");
  std::string model;
  troupe::ModelOptions options;
  int sessions = 1, prompt_tokens = 128, new_tokens = 128, repeat = 3;
  app.add_option("--model", model)->required();
  app.add_option("--backend", options.backend);
  app.add_option("--device", options.device);
  app.add_option("--dtype", options.dtype);
  app.add_option("--threads", options.threads);
  app.add_option("--sessions", sessions);
  app.add_option("--prompt-tokens", prompt_tokens);
  app.add_option("--new-tokens", new_tokens);
  app.add_option("--repeat", repeat);
  CLI11_PARSE(app, argc, argv);

  auto source = troupe::ModelSource::Open(model);
  if (!source.ok()) Die(source.status().ToString());
  const troupe::ModelConfig& c = (*source)->config();
  at::set_num_threads(troupe::ResolveThreads(options));
  auto resolved = troupe::ResolveBackend(options);
  if (!resolved.ok()) Die(resolved.status().ToString());
  const std::string device = resolved->device;
  auto free_bytes = [&device]() -> uint64_t {
    auto m = troupe::DeviceMemoryOf(device);
    return m.ok() ? m->free_bytes : 0;
  };
  const uint64_t free_before = free_bytes();  // a GPU: after its context, before the weights
  auto embedding = troupe::Embedding::Load(**source);
  auto decoder = troupe::Decoder::Load(**source, 0, c.n_layers, options);
  if (!decoder.ok()) Die(decoder.status().ToString());
  auto head = troupe::LmHead::Load(**source, options);
  if (!head.ok()) Die(head.status().ToString());

  // Session s's prompt: ids (7 s + 13 i) mod 4096 + 100, all of one length.
  auto prompt_of = [&](int s) {
    std::vector<int32_t> ids(prompt_tokens);
    for (int i = 0; i < prompt_tokens; ++i) ids[i] = (7 * s + 13 * i) % 4096 + 100;
    return ids;
  };
  auto once = [&](int new_n) {
    Run r;
    std::vector<std::unique_ptr<troupe::KvCache>> caches;
    std::vector<troupe::SessionRows> rows;
    std::vector<int32_t> ids;
    for (int s = 0; s < sessions; ++s) {
      auto cache = troupe::KvCache::Create((*decoder)->cache_shape(), prompt_tokens + new_n);
      if (!cache.ok()) Die(cache.status().ToString());
      caches.push_back(std::move(*cache));
      rows.push_back({caches.back().get(), prompt_tokens});
      const auto p = prompt_of(s);
      ids.insert(ids.end(), p.begin(), p.end());
    }
    auto t0 = Clock::now();
    at::Tensor h = (*embedding)->Forward(ids).value();
    Check((*decoder)->Forward(h, rows));
    std::vector<at::Tensor> last;
    for (int s = 0; s < sessions; ++s) last.push_back(h.slice(0, (s + 1) * prompt_tokens - 1, (s + 1) * prompt_tokens));
    at::Tensor logits = (*head)->Forward(at::cat(last).contiguous()).value();
    std::vector<int32_t> next(sessions);
    Greedy(logits, next);
    r.prefill_s = Seconds(t0);
    r.tokens.push_back(next[0]);
    for (auto& row : rows) row.n_tokens = 1;
    t0 = Clock::now();
    for (int step = 1; step < new_n; ++step) {
      at::Tensor x = (*embedding)->Forward(next).value();
      Check((*decoder)->Forward(x, rows));
      at::Tensor l = (*head)->Forward(x).value();
      Greedy(l, next);
      r.tokens.push_back(next[0]);
    }
    r.decode_s = Seconds(t0);
    return r;
  };
  once(4);  // warm-up: allocator, kernels, BLAS handles
  Run best;
  for (int i = 0; i < repeat; ++i) {
    Run r = once(new_tokens);
    if (i == 0 || r.decode_s < best.decode_s) best.decode_s = r.decode_s, best.tokens = r.tokens;
    if (i == 0 || r.prefill_s < best.prefill_s) best.prefill_s = r.prefill_s;
  }
  const uint64_t free_after = free_bytes();
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  nlohmann::json out = {
      {"backend", (*decoder)->Describe()},
      {"sessions", sessions},
      {"prompt_tokens", prompt_tokens},
      {"new_tokens", new_tokens},
      {"prefill_tokens_per_s", sessions * prompt_tokens / best.prefill_s},
      {"decode_tokens_per_s", sessions * (new_tokens - 1) / best.decode_s},
      {"peak_rss_mb", ru.ru_maxrss / 1024.0},
      {"device_used_mb", static_cast<double>(free_before - free_after) / 1048576.0},
      {"first_tokens",
       std::vector<int32_t>(best.tokens.begin(), best.tokens.begin() + std::min<size_t>(16, best.tokens.size()))},
  };
  std::cout << out.dump() << std::endl;
  return 0;
}

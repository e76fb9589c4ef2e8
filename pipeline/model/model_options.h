// ModelOptions: how a stage runs its share of the model on this node — which
// backend does the math, on which device, in which precision.
//
//   backend "kernels": our quantized CPU kernels over the file's blocks
//                      (bit-exact with llama.cpp's one-token path; the default
//                      on CPU).
//   backend "torch":   libtorch ops over weights expanded to `dtype` on
//                      `device` ("cpu", "cuda", "cuda:N"); the only backend on
//                      a GPU. On CPU it is how CI tests the GPU code path.
//   backend "auto":    kernels on "cpu", torch on anything else.
//
// dtype (torch only): "auto" (bf16 on CUDA, f32 on CPU), "bf16", "f16", "f32".
// Hidden states between stages are fp32 CPU tensors whatever the backend, so
// nodes of either kind speak the same wire.
#pragma once

#include <functional>
#include <string>

#include "pipeline/status.h"

namespace troupe {

struct ModelOptions {
  int threads = 0;               // worker threads for kernels (and torch on CPU); 0 = all cores
  std::string device = "cpu";    // "cpu", "cuda" or "cuda:N"
  std::string backend = "auto";  // "auto", "kernels" or "torch"
  std::string dtype = "auto";    // torch backend: "auto", "bf16", "f16" or "f32"
  // Called while weights load with the fraction done in [0, 1]; may be empty.
  std::function<void(double)> progress;
};

// Threads to use for `options` (resolves 0 to the number of cores).
int ResolveThreads(const ModelOptions& options);

enum class Backend { kKernels, kTorch };

// What `options` resolve to: the backend, the device ("cpu" or "cuda:N") and
// the torch dtype ("bf16", "f16", "f32"; "f16" names the kernels' fp16 KV
// cache). InvalidArgument naming the bad value for an unknown backend,
// device or dtype, kernels on a GPU, or a dtype given to the kernels
// (Unsupported: a CUDA device when this libtorch has no CUDA or no such
// device — see ResolveBackend's check in torch_device.cpp).
struct ResolvedBackend {
  Backend backend = Backend::kKernels;
  std::string device = "cpu";
  std::string dtype = "f16";
  // "kernels (cpu)" or "torch (cuda:0, bf16)": what logs and status say.
  std::string Describe() const;
};
Result<ResolvedBackend> ResolveBackend(const ModelOptions& options);

}  // namespace troupe

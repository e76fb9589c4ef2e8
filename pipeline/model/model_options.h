// ModelOptions: how a stage runs its share of the model on this node.
#pragma once

#include <functional>
#include <string>

namespace troupe {

struct ModelOptions {
  int threads = 0;             // worker threads for kernels; 0 = all cores
  std::string device = "cpu";  // "cpu" (this build); see README for CUDA
  // Called while weights load with the fraction done in [0, 1]; may be empty.
  std::function<void(double)> progress;
};

// Threads to use for `options` (resolves 0 to the number of cores).
int ResolveThreads(const ModelOptions& options);

}  // namespace troupe

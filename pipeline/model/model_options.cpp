#include "pipeline/model/model_options.h"

#include <thread>

namespace troupe {

int ResolveThreads(const ModelOptions& options) {
  if (options.threads > 0) return options.threads;
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace troupe

#include "app/load_engine.h"

#include <unistd.h>

#include <cstdio>

namespace troupe::app {

Result<std::unique_ptr<Engine>> LoadEngineWithProgress(const std::string& path, ModelOptions options) {
  if (::isatty(STDERR_FILENO)) {
    options.progress = [](double fraction) {
      const int width = 40;
      const int filled = static_cast<int>(fraction * width);
      std::fprintf(stderr, "\rloading model [%s%s] %3d%%", std::string(filled, '#').c_str(),
                   std::string(width - filled, ' ').c_str(), static_cast<int>(fraction * 100));
      if (fraction >= 1.0) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    };
  }
  return Engine::Load(path, options);
}

}  // namespace troupe::app

#include "app/engine_commands.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "app/commands.h"

namespace troupe::app {

const EngineCommand kEngineCommands[4] = {
    {"generate", "Generate text with the whole model in this process"},
    {"score", "Score a text: per-position argmax and log-probabilities"},
    {"node", "Run one node of a cluster (from a config file and/or flags)"},
    {"devices", "List the devices this build can run the model on"},
};

std::string_view EngineCommandDescription(std::string_view name) {
  for (const EngineCommand& c : kEngineCommands) {
    if (name == c.name) return c.description;
  }
  return {};
}

std::string EnginePath() { return ExecutableDir() + kEngineBinaryName; }

bool ExecEngineFor(int argc, char** argv) {
  if (argc < 2 || EngineCommandDescription(argv[1]).empty()) return false;
  const std::string engine = EnginePath();
  ::execv(engine.c_str(), argv);
  const int error = errno;
  std::cerr << "troupe: " << argv[1] << " runs in " << kEngineBinaryName << ", "
            << (error == ENOENT ? "not found beside this binary" : "which could not be started") << " at " << engine
            << ": " << std::strerror(error) << std::endl;
  std::exit(127);
}

}  // namespace troupe::app

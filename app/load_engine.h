// Model loading for the engine's commands (generate, score), with a progress
// bar on stderr when stderr is a terminal. troupe-engine only: it links
// libtorch (app/engine_commands.h).
#pragma once

#include <memory>
#include <string>

#include "pipeline/model/engine.h"
#include "pipeline/model/model_options.h"
#include "pipeline/status.h"

namespace troupe::app {

Result<std::unique_ptr<Engine>> LoadEngineWithProgress(const std::string& path, ModelOptions options);

}  // namespace troupe::app

// `troupe devices [--json]`: where this build can run a model — the CPU
// always, and each CUDA device its libtorch sees, with free and total
// memory. --json prints {"cuda": bool, "devices": [{"name": "cpu"},
// {"name": "cuda:0", "free_mb": F, "total_mb": T}, ...]}.
#include <nlohmann/json.hpp>

#include <iostream>

#include "app/commands.h"
#include "app/engine_commands.h"
#include "pipeline/model/torch_device.h"

namespace troupe::app {

void RegisterDevices(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("devices", std::string(EngineCommandDescription("devices")));
  cmd->add_flag("--json", *json, "One JSON object");
  cmd->callback([json] {
    nlohmann::json out = {{"cuda", CudaAvailable()}, {"devices", nlohmann::json::array({{{"name", "cpu"}}})}};
    for (int i = 0; i < 64; ++i) {
      const std::string name = "cuda:" + std::to_string(i);
      if (!CheckDeviceAvailable(name).ok()) break;
      nlohmann::json d = {{"name", name}};
      if (Result<DeviceMemory> m = DeviceMemoryOf(name); m.ok()) {
        d["free_mb"] = m->free_bytes >> 20;
        d["total_mb"] = m->total_bytes >> 20;
      }
      out["devices"].push_back(d);
    }
    if (*json) {
      std::cout << out.dump() << std::endl;
      return;
    }
    for (const auto& d : out["devices"]) {
      std::cout << d["name"].get<std::string>();
      if (d.contains("free_mb")) std::cout << "  " << d["free_mb"] << " MiB free of " << d["total_mb"] << " MiB";
      std::cout << "\n";
    }
    if (!out["cuda"].get<bool>()) std::cout << "(no CUDA: " << CheckDeviceAvailable("cuda:0").message() << ")\n";
  });
}

}  // namespace troupe::app

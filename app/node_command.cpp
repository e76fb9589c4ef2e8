// `troupe node --config FILE`: runs one node of a cluster — the actors its
// YAML config names (head and/or shard), until SIGINT/SIGTERM or until its
// parent process (config parent_pid) goes away. Config format: cluster/node_config.h.
#include <memory>
#include <string>

#include "actors/node.h"
#include "app/commands.h"
#include "cluster/node_config.h"

namespace troupe::app {

void RegisterNode(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("node", "Run one node of a cluster from its config file");
  cmd->add_option("--config", *path, "Node config (YAML)")->required();
  cmd->callback([path] {
    auto config = cluster::LoadNodeConfig(*path);
    if (!config.ok()) return Fail(config.status().ToString());
    SetExitCode(actors::RunNode(*config));
  });
}

}  // namespace troupe::app

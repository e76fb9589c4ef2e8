// `troupe status --endpoint EP [--json]`: the cluster's metrics through the
// head's job endpoint — per node: cache bytes in use and budget, open
// sessions, steps, batches, rejected messages. Plain: "node name value"
// lines; --json: {"nodes": {"<node>": {"<name>": value, ...}, ...}}.
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>
#include <string>

#include "app/commands.h"
#include "client/job_client.h"

namespace troupe::app {
namespace {

struct StatusFlags {
  std::string endpoint;
  std::string server_key;
  std::string client_key;
  bool json = false;
};

void RunStatus(const StatusFlags& f) {
  client::JobClientOptions options;
  options.endpoint = f.endpoint;
  options.server_key = f.server_key;
  options.client_key_file = f.client_key;
  auto client = client::JobClient::Connect(options);
  if (!client.ok()) return Fail(client.status().ToString());
  auto m = (*client)->Metrics();
  if (!m.ok()) return Fail(m.status().message());
  nlohmann::json nodes = nlohmann::json::object();
  auto put = [&](const std::string& key, double value) {
    const auto slash = key.find('/');
    if (slash == std::string::npos) return;
    nodes[key.substr(0, slash)][key.substr(slash + 1)] = value;
  };
  for (const auto& [k, v] : m->gauges()) put(k, v);
  for (const auto& [k, v] : m->counters()) put(k, static_cast<double>(v));
  if (f.json) {
    std::cout << nlohmann::json{{"nodes", nodes}}.dump() << std::endl;
    return;
  }
  for (const auto& [node, values] : nodes.items()) {
    for (const auto& [name, value] : values.items()) std::cout << node << " " << name << " " << value << "\n";
  }
  std::cout << std::flush;
}

}  // namespace

void RegisterStatus(CLI::App& app) {
  auto flags = std::make_shared<StatusFlags>();
  CLI::App* cmd = app.add_subcommand("status", "Metrics of a cluster's nodes (cache memory, sessions, steps)");
  cmd->add_option("--endpoint", flags->endpoint, "The head's job endpoint")->required();
  cmd->add_option("--server-key", flags->server_key, "The head's CURVE public key (Z85), for a non-loopback endpoint");
  cmd->add_option("--client-key", flags->client_key, "This client's node.key (CURVE)");
  cmd->add_flag("--json", flags->json, "One JSON object");
  cmd->callback([flags] { RunStatus(*flags); });
}

}  // namespace troupe::app

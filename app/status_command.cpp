// `troupe status --endpoint EP [--json]`: the cluster's metrics through the
// head's job endpoint — per node: cache bytes in use and budget, open
// sessions, steps, batches, rejected messages, and what was refused
// (handshakes_refused_total{address,domain,key,peer}, announces_refused_total
// {peer,reason}, link_refusals_total / link_handshake_failures_total
// {endpoint,peer}: actors/refusals.h). Plain: "node name value" lines, then
// "no route: WHY" while no job can be routed; --json: {"nodes": {"<node>":
// {"<name>": value, ...}, ...}, "route_problem": WHY or ""}.
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>
#include <string>

#include "app/commands.h"
#include "client/job_client.h"

namespace troupe::app {
namespace {

struct StatusFlags {
  HeadFlags head;
  bool json = false;
};

void RunStatus(const StatusFlags& f) {
  auto client = ConnectToHead(f.head);
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
    std::cout << nlohmann::json{{"nodes", nodes}, {"route_problem", m->route_problem()}}.dump() << std::endl;
    return;
  }
  for (const auto& [node, values] : nodes.items()) {
    for (const auto& [name, value] : values.items()) std::cout << node << " " << name << " " << value << "\n";
  }
  if (!m->route_problem().empty()) std::cout << "no route: " << m->route_problem() << "\n";
  std::cout << std::flush;
}

}  // namespace

void RegisterStatus(CLI::App& app) {
  auto flags = std::make_shared<StatusFlags>();
  CLI::App* cmd = app.add_subcommand("status", "Metrics of a cluster's nodes (cache memory, sessions, steps)");
  AddHeadFlags(cmd, &flags->head);
  cmd->add_flag("--json", flags->json, "One JSON object");
  cmd->callback([flags] { RunStatus(*flags); });
}

}  // namespace troupe::app

// `troupe admin drain --endpoint EP NODE [--timeout S] [--json]`: drains a
// shard node — no new session goes to it, its running jobs move to replicas
// (replayed: the same tokens) or finish on it, then it leaves (within S
// seconds; 0: the node's own drain_timeout_seconds). Prints what the head did:
// "node 'shard-1' is draining: 2 job(s) moved to other nodes, 0 finishing on
// it", or with --json {"node", "moved", "staying", "text"}. Over the job
// endpoint (who may: its client allowlist); over HTTP the same is
// POST /admin/nodes/NODE/drain with an admin key.
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>
#include <string>

#include "app/commands.h"
#include "client/job_client.h"

namespace troupe::app {
namespace {

struct DrainFlags {
  HeadFlags head;
  std::string node;
  double timeout = 0;
  bool json = false;
};

void RunDrain(const DrainFlags& f) {
  auto client = ConnectToHead(f.head);
  if (!client.ok()) return Fail(client.status().ToString());
  auto status = (*client)->DrainNode(f.node, f.timeout);
  if (!status.ok()) return Fail(status.status().message());
  if (f.json) {
    std::cout << nlohmann::ordered_json{{"node", status->node_id()},
                                        {"moved", status->moved()},
                                        {"staying", status->staying()},
                                        {"text", status->text()}}
                     .dump()
              << std::endl;
    return;
  }
  std::cout << status->text() << std::endl;
}

}  // namespace

void RegisterAdmin(CLI::App& app) {
  auto f = std::make_shared<DrainFlags>();
  CLI::App* cmd = app.add_subcommand("admin", "Operate a running cluster");
  cmd->require_subcommand(1);
  CLI::App* drain = cmd->add_subcommand("drain", "Drain a shard node: its jobs move or finish, then it leaves");
  AddHeadFlags(drain, &f->head);
  drain->add_option("node", f->node, "The shard node's id")->required();
  drain->add_option("--timeout", f->timeout, "Seconds the node waits for its jobs at most (0: its own setting)");
  drain->add_flag("--json", f->json, "One JSON object");
  drain->callback([f] { RunDrain(*f); });
}

}  // namespace troupe::app

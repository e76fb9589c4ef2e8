// `troupe node [--config FILE] [flags]`: runs one node of a cluster — the
// actors its config names (head and/or shard), until SIGINT/SIGTERM or until
// its parent process (config parent_pid) goes away. Config format:
// cluster/node_config.h. Flags set the same keys and win over the file's;
// without a file they describe a shard that joins a head:
//
//   troupe node --join tcp://10.0.0.1:5601 --id shard-7 --layers auto
//     --listen tcp://0.0.0.0:5601 --advertise tcp://10.0.0.7:5601
//     --secret-key keys/shard-7/node.key --allowlist keys/allowlist --head-key keys/head.pub
// (one command line). A node that moves (RunNode returns kExitToMove) is
// started again by re-executing this same command line in the same process
// (same pid, so supervisors and `cluster up` keep tracking it).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "actors/node.h"
#include "app/commands.h"
#include "app/engine_commands.h"
#include "cluster/node_config.h"

namespace troupe::app {
namespace {

// execv of this process's own command line; returns only on failure.
void StartAgain() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t at = 0; at < all.size();) {
    const size_t end = all.find('\0', at);
    args.push_back(all.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (args.empty()) return;
  ::execv("/proc/self/exe", argv.data());
  std::perror("troupe node: starting again failed");
}

struct NodeFlags {
  std::string config, join, id, model, layers, listen, advertise, secret_key, head_key, allowlist;
  std::optional<double> memory_budget_mb, cache_budget_mb;
  std::optional<int> threads;
  std::string device, backend, dtype;
  bool insecure = false;
  std::optional<double> rebalance_seconds;
  std::string test_fault;
};

Status ParseLayers(const std::string& text, cluster::NodeConfig* c) {
  if (text == "auto") {
    c->layers_auto = true;
    return Status::Ok();
  }
  const size_t sep = text.find_first_of(":-");
  try {
    if (sep == std::string::npos) throw std::invalid_argument("");
    size_t used = 0;
    c->layer_begin = std::stoll(text.substr(0, sep), &used);
    if (used != sep) throw std::invalid_argument("");
    c->layer_end = std::stoll(text.substr(sep + 1), &used);
    if (used != text.size() - sep - 1) throw std::invalid_argument("");
  } catch (const std::exception&) {
    return Status::InvalidArgument("--layers '" + text + "': expected auto or BEGIN:END (e.g. 0:10)");
  }
  c->layers_auto = false;
  return Status::Ok();
}

// The file's config (or a shard's defaults) with the flags laid over it.
Result<cluster::NodeConfig> ConfigFromFlags(const NodeFlags& f) {
  cluster::NodeConfig c;
  std::string what = "troupe node";
  if (!f.config.empty()) {
    TROUPE_ASSIGN_OR_RETURN(c, cluster::LoadNodeConfig(f.config));
    what = "node config " + f.config + " with flags";
  } else {
    c.shard = true;  // flags alone describe a joining shard
    char host[256] = {0};
    ::gethostname(host, sizeof(host) - 1);
    c.id = host;
  }
  if (!f.id.empty()) c.id = f.id;
  if (!f.model.empty() || c.model.empty()) c.model = ResolveModelPath(f.model);
  if (!f.layers.empty()) TROUPE_RETURN_IF_ERROR(ParseLayers(f.layers, &c));
  if (!f.listen.empty()) c.listen = cluster::BindSpelling(f.listen);
  if (!f.advertise.empty()) c.advertise = f.advertise;
  if (!f.secret_key.empty() || !f.allowlist.empty()) c.curve = true;
  if (!f.secret_key.empty()) c.secret_key_file = f.secret_key;
  if (!f.allowlist.empty()) c.allowlist = f.allowlist;
  if (f.insecure) c.insecure = true;
  if (f.memory_budget_mb) c.memory_budget_bytes = static_cast<uint64_t>(*f.memory_budget_mb * 1024 * 1024);
  if (f.cache_budget_mb) c.cache_budget_bytes = static_cast<uint64_t>(*f.cache_budget_mb * 1024 * 1024);
  if (f.threads) c.threads = *f.threads;
  if (!f.device.empty()) c.device = f.device;
  if (!f.backend.empty()) c.backend = f.backend;
  if (!f.dtype.empty()) c.dtype = f.dtype;
  if (f.rebalance_seconds) c.rebalance_seconds = *f.rebalance_seconds;
  if (!f.test_fault.empty()) c.test_fault = f.test_fault;
  if (!f.join.empty()) {
    if (Status st = cluster::JoinHead(&c, f.join, f.head_key); !st.ok()) {
      return Status::InvalidArgument(what + ": --join: " + st.message());
    }
  } else if (!f.head_key.empty()) {
    return Status::InvalidArgument(what + ": --head-key goes with --join");
  }
  TROUPE_RETURN_IF_ERROR(cluster::ValidateNodeConfig(c, what));
  return c;
}

}  // namespace

void RegisterNode(CLI::App& app) {
  auto f = std::make_shared<NodeFlags>();
  CLI::App* cmd = app.add_subcommand("node", std::string(EngineCommandDescription("node")));
  cmd->add_option("--config", f->config, "Node config (YAML, cluster/node_config.h)");
  cmd->add_option("--join", f->join, "The head's node endpoint (tcp://HOST:PORT) this shard announces itself to");
  cmd->add_option("--id", f->id, "Node id (default: the file's, else the host name)");
  cmd->add_option("--model", f->model, "GGUF file or Hugging Face folder (default: the installed model)");
  cmd->add_option("--layers", f->layers, "Decoder layers: BEGIN:END, or auto (chosen from the head's coverage)");
  cmd->add_option("--listen", f->listen, "Node listener, e.g. tcp://0.0.0.0:5601");
  cmd->add_option("--advertise", f->advertise, "The address peers dial, e.g. tcp://10.0.0.7:5601");
  cmd->add_option("--secret-key", f->secret_key, "This node's node.key (CURVE on node links)");
  cmd->add_option("--allowlist", f->allowlist, "Node keys this node accepts: a .pub file or a folder of them");
  cmd->add_option("--head-key", f->head_key, "The head's public key: Z85 or its .pub file");
  cmd->add_option("--memory-budget-mb", f->memory_budget_mb,
                  "With --layers auto: MiB for weights, KV cache and process (default: 90% of available)");
  cmd->add_option("--cache-budget-mb", f->cache_budget_mb, "KV cache budget, MiB");
  cmd->add_option("--threads", f->threads, "Compute threads (0 = all cores)");
  cmd->add_option("--device", f->device, "cpu, cuda or cuda:N (default: the file's, else cpu)");
  cmd->add_option("--backend", f->backend, "auto, kernels or torch (default: the file's, else auto)");
  cmd->add_option("--dtype", f->dtype, "Torch backend: auto, bf16, f16 or f32 (default: the file's, else auto)");
  cmd->add_option("--rebalance-seconds", f->rebalance_seconds,
                  "With --layers auto: how often to ask whether to move to better layers (0 = never; default 120)");
  cmd->add_flag("--insecure", f->insecure, "Allow plain (no CURVE) links on non-loopback addresses");
  // Tests only (node config test_fault): not in --help.
  cmd->add_option("--test-fault", f->test_fault, "")->group("");
  cmd->callback([f] {
    if (f->config.empty() && f->join.empty()) return Fail("troupe node: give --config FILE or --join HEAD_ENDPOINT");
    Result<cluster::NodeConfig> config = ConfigFromFlags(*f);
    if (!config.ok()) return Fail(config.status().ToString());
    const int code = actors::RunNode(*config);
    if (code == actors::kExitToMove) {
      std::cerr << "troupe node " << config->id << ": starting again to choose layers anew" << std::endl;
      StartAgain();
      SetExitCode(1);
      return;
    }
    SetExitCode(code);
  });
}

}  // namespace troupe::app

// `troupe cluster up --shards N [--replicas R] [--dir DIR] [--base-port P]
// [--http-port P] [--amateur-model PATH] [--api-key KEY]... [--api-key-file F]
// [--admin-key-file F] [--job-curve]`: a head node and N×R shard processes on this machine
// (cluster/local_cluster.h). Prints the job endpoint once the ring answers,
// writes DIR/cluster.json (with the head's HTTP API port), and stays in the foreground until SIGINT/SIGTERM,
// when it stops every node. Nodes die with it even when it is SIGKILLed. The nodes are
// `troupe-engine node` processes (app/engine_commands.h).
#include <memory>
#include <string>

#include <unistd.h>

#include "app/commands.h"
#include "app/engine_commands.h"
#include "cluster/local_cluster.h"

namespace troupe::app {

void RegisterCluster(CLI::App& app) {
  auto o = std::make_shared<cluster::ClusterOptions>();
  auto model = std::make_shared<std::string>();
  auto budget_mb = std::make_shared<double>(512);
  CLI::App* cluster = app.add_subcommand("cluster", "A local cluster of node processes");
  cluster->require_subcommand(1);
  CLI::App* up = cluster->add_subcommand("up", "Start a head and N x R shard nodes; stop them on SIGINT/SIGTERM");
  up->add_option("--shards", o->shards, "Shard nodes (layers split evenly)")->capture_default_str();
  up->add_option("--replicas", o->replicas, "Nodes per shard span")->capture_default_str();
  up->add_option("--stage-nodes", o->stage_nodes,
                 "Nodes that run the embedding and LM head (the head then only schedules and samples)")
      ->capture_default_str();
  up->add_option("--dir", o->dir, "Directory for keys, configs, logs and cluster.json (default: a new temp dir)");
  up->add_option("--base-port", o->base_port, "First TCP port (0: ports chosen by the OS)")->capture_default_str();
  up->add_option("--http-port", o->http_port,
                 "Port of the head's OpenAI-compatible HTTP API on 127.0.0.1 (0: chosen by the OS; "
                 "-1: none); the bound port goes into cluster.json")
      ->capture_default_str();
  up->add_option("--http-host", o->http_host,
                 "Address the HTTP API listens on (0.0.0.0: every address; off loopback the console's /api/v1 "
                 "views need an admin key)")
      ->capture_default_str();
  up->add_flag("--node-metrics", o->node_metrics,
               "Every node but the head serves its own /metrics on a port the OS picks (cluster.json: metrics_url)");
  up->add_flag("!--no-hop-timing", o->hop_timing,
               "Steps carry no per-hop times (the console shows no waterfall; for measuring their cost)");
  up->add_flag("--insecure", o->insecure, "Plain node-to-node links (no CURVE)");
  up->add_option("--model", *model,
                 "GGUF file or Hugging Face folder (default: $TROUPE_MODEL, else the installed model)");
  up->add_option("--amateur-model", o->amateur_model,
                 "Contrastive decoding: the head's amateur model (same vocabulary as --model); without it "
                 "contrastive jobs are refused");
  up->add_option("--threads", o->threads, "Compute threads per node (0 = all cores)")->capture_default_str();
  up->add_option("--device", o->device, "Every node's device: cpu, cuda or cuda:N")->capture_default_str();
  up->add_option("--backend", o->backend, "Every node's backend: auto, kernels or torch")->capture_default_str();
  up->add_option("--dtype", o->dtype, "Torch backend dtype: auto, bf16, f16 or f32")->capture_default_str();
  up->add_option("--cache-budget-mb", *budget_mb, "KV cache budget per shard node, MiB")->capture_default_str();
  up->add_option("--max-batch-sessions", o->max_batch_sessions, "Sessions per batch (0 = no limit)")
      ->capture_default_str();
  up->add_option("--burst-wait-ms", o->burst_wait_ms,
                 "A stage holding part of a burst of steps waits this long at most for the rest before it "
                 "computes (0 = never)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1000.0));
  up->add_option("--kept-session-ttl", o->kept_session_ttl_seconds,
                 "Seconds an idle kept session lives on (troupe submit --session NAME --keep)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  up->add_option("--max-queued-jobs", o->max_queued_jobs, "Jobs waiting for KV cache at most; past that, BUSY")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  up->add_option("--spot-check-fraction", o->spot_check_fraction,
                 "Share of sessions the head runs again with one span on another replica, to catch a shard "
                 "computing wrong hidden states (0 = none)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  up->add_flag(
      "--no-journal", [o](int64_t) { o->journal = false; },
      "Keep accepted jobs in the head's memory only: nothing survives a head restart (for comparisons)");
  up->add_option("--job-retention", o->job_retention_seconds,
                 "Seconds an ended job's answer stays in the journal (DIR/jobs.db) for submit --attach")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  up->add_flag(
      "--no-prefix-reuse", [o](int64_t) { o->prefix_reuse = false; },
      "Close finished jobs' caches instead of parking them for jobs with the same prompt start");
  up->add_option("--api-key", o->api_keys, "HTTP API key (repeatable): requests then need 'Authorization: Bearer KEY'");
  up->add_option("--api-key-file", o->api_key_file,
                 "HTTP API key file, one key per line: [NAME] KEY [role=admin] [max_concurrent_jobs=N] "
                 "[max_prompt_tokens=N] [max_tokens=N] [max_request_bytes=N]; re-read on SIGHUP to the head")
      ->check(CLI::ExistingFile);
  up->add_option("--admin-key-file", o->admin_key_file,
                 "HTTP API admin key file (same format; its keys are admin keys, for /admin/ routes)")
      ->check(CLI::ExistingFile);
  up->add_flag("--job-curve", o->job_curve,
               "CURVE on the job endpoint too (clients need DIR/keys/client/node.key, or a key in "
               "DIR/keys/clients/, and the head's public key)");
  up->add_option("--ready-timeout", o->ready_timeout_seconds, "Seconds to wait for the ring")->capture_default_str();
  up->callback([o, model, budget_mb] {
    cluster::ClusterOptions options = *o;
    options.model = ResolveModelPath(*model);
    options.cache_budget_bytes = static_cast<uint64_t>(*budget_mb * 1024 * 1024);
    options.troupe_binary = EnginePath();
    if (::access(options.troupe_binary.c_str(), X_OK) != 0) {
      Fail("cluster up starts its nodes with " + options.troupe_binary +
           ", which is not there (build it: ninja -C build)");
      return;
    }
    SetExitCode(cluster::RunClusterUp(options));
  });
}

}  // namespace troupe::app

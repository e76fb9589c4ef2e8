// LocalRing: a head node and N shard nodes in this process, each with its own
// ZeroMQ context, actor system and bridge thread, talking over loopback TCP
// exactly as separate processes would. For tests of the whole ring.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "actors/node.h"
#include "client/job_client.h"
#include "cluster/node_config.h"
#include "messages/sampling_params_proto.h"

namespace troupe::actors::testing {

inline std::string DefaultModel() { return TROUPE_DEFAULT_MODEL; }

struct LocalRingOptions {
  int shards = 3;
  int n_layers = 30;
  uint64_t cache_budget_bytes = uint64_t{256} << 20;
  int threads = 1;
  int max_batch_sessions = 0;
};

class LocalRing {
 public:
  // Starts the nodes and waits until a job gets through the ring.
  static Result<std::unique_ptr<LocalRing>> Start(const LocalRingOptions& o) {
    std::unique_ptr<LocalRing> ring(new LocalRing());
    cluster::NodeConfig head;
    head.id = "head";
    head.head = true;
    head.model = DefaultModel();
    head.threads = o.threads;
    head.max_batch_sessions = o.max_batch_sessions;
    TROUPE_ASSIGN_OR_RETURN(ring->head_, Node::Start(head));
    for (int i = 0; i < o.shards; ++i) {
      cluster::NodeConfig s;
      s.id = "shard-" + std::to_string(i);
      s.shard = true;
      s.layer_begin = o.n_layers * i / o.shards;
      s.layer_end = o.n_layers * (i + 1) / o.shards;
      s.model = DefaultModel();
      s.threads = o.threads;
      s.cache_budget_bytes = o.cache_budget_bytes;
      s.max_batch_sessions = o.max_batch_sessions;
      s.head_id = "head";
      cluster::PeerConfig peer;
      peer.id = "head";
      peer.endpoint = ring->head_->node_endpoint();
      s.peers.push_back(peer);
      TROUPE_ASSIGN_OR_RETURN(auto node, Node::Start(s));
      ring->shards_.push_back(std::move(node));
    }
    TROUPE_RETURN_IF_ERROR(ring->WaitReady());
    return ring;
  }

  const std::string& job_endpoint() const { return head_->job_endpoint(); }

  Result<std::unique_ptr<client::JobClient>> Client() const {
    client::JobClientOptions o;
    o.endpoint = job_endpoint();
    o.idle_ms = 60000;
    return client::JobClient::Connect(o);
  }

  // Runs one job; the sampled ids (an eos id included).
  Result<std::vector<int32_t>> Run(const std::string& prompt, const SamplingParams& params,
                                   v1::Finish* finish = nullptr) const {
    TROUPE_ASSIGN_OR_RETURN(auto client, Client());
    v1::JobSubmit job;
    job.set_prompt(prompt);
    *job.mutable_sampling() = SamplingParamsToProto(params);
    job.set_stream(true);
    std::vector<int32_t> ids;
    TROUPE_ASSIGN_OR_RETURN(v1::Finish f, client->Run(job, [&](const v1::Token& t) { ids.push_back(t.token_id()); }));
    if (finish) *finish = f;
    return ids;
  }

 private:
  Status WaitReady() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    SamplingParams p;
    p.max_tokens = 1;
    Status last;
    while (std::chrono::steady_clock::now() < deadline) {
      Result<std::vector<int32_t>> r = Run("Hi", p);
      if (r.ok()) return Status::Ok();
      last = r.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return last;
  }

  std::unique_ptr<Node> head_;
  std::vector<std::unique_ptr<Node>> shards_;
};

}  // namespace troupe::actors::testing

#include "actors/bridge.h"
#include "pipeline/log.h"

#include <caf/send.hpp>

#include <iostream>

#include "actors/local_messages.h"
#include "messages/envelope_codec.h"
#include "messages/frames_codec.h"
#include "messages/origin.h"

namespace troupe::actors {

Bridge::Bridge(std::shared_ptr<NodeContext> ctx) : ctx_(std::move(ctx)) {}

transport::PollLoopCallbacks Bridge::Callbacks() {
  transport::PollLoopCallbacks cb;
  cb.on_message = [this](transport::LinkId link, transport::Inbound&& m) { OnMessage(link, std::move(m)); };
  cb.on_send_error = [this](transport::LinkId link, const std::string& peer, const Status& e) {
    OnSendError(link, peer, e);
  };
  cb.on_event = [this](transport::LinkId link, const transport::LinkEvent& e) { OnEvent(link, e); };
  cb.on_tick = [this] { OnTick(); };
  return cb;
}

void Bridge::Answer(const Origin& to, v1::Envelope envelope) {
  if (!replies_) replies_ = std::make_unique<transport::Outbound>(ctx_->loop);
  WireResult<transport::Frames> frames = EncodeFrames(std::move(envelope), at::Tensor());
  const Status st = frames.ok() ? replies_->Send(to.link, to.peer, std::move(*frames)) : frames.error().ToStatus();
  if (st.ok()) return;
  ctx_->counters.send_errors_total++;
  // Logged at most once a second: a dead link fails every heartbeat.
  const auto now = std::chrono::steady_clock::now();
  if (now < next_send_error_log_) return;
  next_send_error_log_ = now + std::chrono::seconds(1);
  logging::Warn(
      logging::Cat("send failed on link ", to.link, (to.peer.empty() ? "" : " to " + to.peer), ": ", st.ToString()));
}

void Bridge::OnMessage(transport::LinkId link, transport::Inbound&& message) {
  const Origin from{link, std::move(message.peer)};
  WireResult<Received> received = DecodeFrames(message.frames, ctx_->limits, &ctx_->rejects);
  if (!received.ok()) {
    // Rejected before any actor sees it (and counted by DecodeFrames).
    v1::Envelope env = NewEnvelope();
    *env.mutable_error() = received.error().ToProto();
    env.mutable_error()->set_node_id(ctx_->node_id);
    return Answer(from, std::move(env));
  }
  const bool job_link = link == ctx_->links->job_listener();
  if (received->envelope.has_step_burst()) {  // each step as if it had come alone, in order
    v1::StepBurst& burst = *received->envelope.mutable_step_burst();
    for (int i = 0; i < burst.steps_size(); ++i) {
      Received one;
      one.envelope = NewEnvelope(received->envelope.request_id());
      one.envelope.mutable_step()->Swap(burst.mutable_steps(i));
      one.tensor = std::move(received->burst_tensors[static_cast<size_t>(i)]);
      std::optional<v1::Envelope> refused = DeliverLocal(*ctx_, from, std::move(one), job_link, /*on_loop=*/true);
      if (refused) Answer(from, std::move(*refused));
    }
    return;
  }
  std::optional<v1::Envelope> refused = DeliverLocal(*ctx_, from, std::move(*received), job_link, /*on_loop=*/true);
  if (refused) Answer(from, std::move(*refused));
}

void Bridge::OnSendError(transport::LinkId link, const std::string& peer, const Status& error) {
  ctx_->counters.send_errors_total++;
  if (link == ctx_->links->job_listener() && !peer.empty()) {
    if (ctx_->scheduler) caf::anon_send(ctx_->scheduler, PeerGone{Origin{link, peer}});
    return;
  }
  logging::Warn(
      logging::Cat("send failed on link ", link, (peer.empty() ? "" : " to " + peer), ": ", error.ToString()));
}

void Bridge::OnEvent(transport::LinkId link, const transport::LinkEvent& event) {
  if (!ctx_->links || !ctx_->scheduler) {
    if (ctx_->links) (void)ctx_->links->OnEvent(link, event);
    return;
  }
  const transport::Links::Change change = ctx_->links->OnEvent(link, event);
  if (change.trouble) {
    caf::anon_send(ctx_->scheduler, NodeTrouble{change.trouble->node_id, change.trouble->text, true});
  }
  // Only a link that was up says its node went away: one refused or still
  // connecting says nothing of the node (its troubles are said above).
  if (change.lost) caf::anon_send(ctx_->scheduler, NodeDown{ctx_->links->NodeOf(link)});
}

void Bridge::Heartbeat() {
  const cluster::NodeConfig& c = ctx_->config;
  if (!(c.shard || c.StageNode()) || c.head_id.empty() || c.head_id == ctx_->node_id) return;
  const auto now = std::chrono::steady_clock::now();
  // A drain is said at the next tick, not at the next second: a node that
  // moves must be seen draining before another decides the same move.
  const bool draining = ctx_->draining;
  if (now < next_heartbeat_ && draining == said_draining_) return;
  next_heartbeat_ = now + std::chrono::seconds(1);
  said_draining_ = draining;
  const cluster::PeerConfig* head = c.FindPeer(c.head_id);
  if (!head || head->endpoint.empty()) return;
  Result<transport::LinkId> link = ctx_->links->ConnectTo(c.head_id, head->endpoint);
  if (!link.ok()) return;
  v1::Envelope env = NewEnvelope();
  v1::Heartbeat* hb = env.mutable_heartbeat();
  hb->set_node_id(ctx_->node_id);
  const uint64_t compute_ns = ctx_->counters.compute_ns.load(), batches = ctx_->counters.batches_total.load();
  if (batches > last_batches_) {
    const double ms =
        static_cast<double>(compute_ns - last_compute_ns_) / 1e6 / static_cast<double>(batches - last_batches_);
    step_ms_ = step_ms_ > 0 ? 0.7 * step_ms_ + 0.3 * ms : ms;
  }
  last_compute_ns_ = compute_ns;
  last_batches_ = batches;
  hb->set_step_ms(step_ms_);
  hb->set_sessions(static_cast<uint32_t>(ctx_->counters.sessions_open.load()));
  hb->set_draining(draining);
  hb->set_rss_bytes(ResidentBytes());
  hb->set_version(kTroupeVersion);
  hb->set_device(ctx_->device_text);
  hb->set_cache_bytes(ctx_->counters.cache_bytes_in_use.load() + ctx_->counters.cache_bytes_parked.load());
  hb->set_cache_budget_bytes(ctx_->config.shard ? ctx_->config.cache_budget_bytes : 0);
  hb->set_steps_total(ctx_->counters.steps_total.load());
  for (const transport::LinkTrouble& t : ctx_->links->Troubles()) {
    v1::LinkTrouble* out = hb->add_link_troubles();
    out->set_node_id(t.node_id);
    out->set_endpoint(t.endpoint);
    out->set_text(t.text);
  }
  Answer(Origin{*link, ""}, std::move(env));
  if (c.StageNode() && !c.shard) Answer(Origin{*link, ""}, StageAnnounce());
}

// A stage node's announce (a shard's comes from its actor, with its layers):
// the stages it runs, where, with which model and key.
v1::Envelope Bridge::StageAnnounce() const {
  const cluster::NodeConfig& c = ctx_->config;
  v1::Envelope env = NodeAnnounce(*ctx_);
  v1::RegistryAnnounce* a = env.mutable_registry_announce();
  if (c.embedding) a->add_serves(v1::STAGE_EMBEDDING);
  if (c.lm_head) a->add_serves(v1::STAGE_LM_HEAD);
  return env;
}

void Bridge::OnTick() {
  Heartbeat();
  if (replies_ && replies_->HasQueued()) {
    size_t dropped = 0;
    replies_->Retry(&dropped);
    ctx_->counters.send_errors_total += dropped;
  }
}

}  // namespace troupe::actors

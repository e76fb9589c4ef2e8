#include "actors/sender.h"

#include <caf/send.hpp>

#include "actors/local_messages.h"
#include "messages/envelope_codec.h"

namespace troupe::actors {

Sender::Sender(std::shared_ptr<NodeContext> ctx) : ctx_(std::move(ctx)), outbound_(ctx_->loop) {}

Status Sender::Local(v1::Envelope envelope, at::Tensor tensor) {
  Received m{std::move(envelope), std::move(tensor)};
  std::optional<v1::Envelope> refused = DeliverLocal(*ctx_, Origin{0, ctx_->node_id}, std::move(m), false);
  if (refused) return Status::NotFound(refused->error().text());
  return Status::Ok();
}

Status Sender::Deliver(transport::LinkId link, const std::string& peer, v1::Envelope envelope,
                       const at::Tensor& tensor) {
  WireResult<transport::Frames> frames = EncodeFrames(std::move(envelope), tensor);
  if (!frames.ok()) return frames.error().ToStatus();
  Status st = outbound_.Send(link, peer, std::move(*frames));
  if (!st.ok()) ctx_->counters.send_errors_total++;
  return st;
}

Status Sender::ForwardStep(v1::Step step, at::Tensor tensor) {
  if (step.rest_of_route_size() == 0) {
    return Status::InvalidArgument("step of session " + std::to_string(step.session_id()) + " has no next hop");
  }
  *step.mutable_hop() = step.rest_of_route(0);
  step.mutable_rest_of_route()->erase(step.mutable_rest_of_route()->begin());
  const std::string node = step.hop().node_id();
  const std::string endpoint = step.hop().endpoint();
  v1::Envelope env = NewEnvelope();
  *env.mutable_step() = std::move(step);
  if (node == ctx_->node_id) return Local(std::move(env), std::move(tensor));
  if (ctx_->links->curve()) ctx_->links->LearnKey(node, env.step().hop().public_key());
  const v1::Dtype encoding = env.step().hop().encoding();
  TROUPE_ASSIGN_OR_RETURN(transport::LinkId link, ctx_->links->ConnectTo(node, endpoint));
  WireResult<transport::Frames> frames = EncodeFrames(env, tensor, encoding);
  if (!frames.ok() && encoding == v1::DTYPE_INT8_BLOCK32)
    frames = EncodeFrames(std::move(env), tensor);  // e.g. a width not of 32s
  if (!frames.ok()) return frames.error().ToStatus();
  uint64_t bytes = 0;
  for (const zmq::message_t& f : *frames) bytes += f.size();
  ctx_->step_bytes.Add(node, bytes);
  Status st = outbound_.Send(link, "", std::move(*frames));
  if (!st.ok()) ctx_->counters.send_errors_total++;
  return st;
}

Status Sender::ToNode(const std::string& node_id, const std::string& endpoint, v1::Envelope envelope) {
  if (node_id == ctx_->node_id) return Local(std::move(envelope), at::Tensor());
  TROUPE_ASSIGN_OR_RETURN(transport::LinkId link, ctx_->links->ConnectTo(node_id, endpoint));
  return Deliver(link, "", std::move(envelope), at::Tensor());
}

Status Sender::Reply(const Origin& to, v1::Envelope envelope) {
  if (to.link == kJobBookLink) {
    if (!ctx_->scheduler) return Status::NotFound("node '" + ctx_->node_id + "' runs no scheduler for job output");
    caf::anon_send(ctx_->scheduler, JobOutput{std::move(envelope)});
    return Status::Ok();
  }
  if (to.link == 0) return Local(std::move(envelope), at::Tensor());
  return Deliver(to.link, to.peer, std::move(envelope), at::Tensor());
}

void Sender::Retry() {
  size_t dropped = 0;
  outbound_.Retry(&dropped);
  if (dropped) ctx_->counters.send_errors_total += dropped;
}

}  // namespace troupe::actors

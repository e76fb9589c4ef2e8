#include "actors/sender.h"

#include <caf/send.hpp>

#include <algorithm>
#include <utility>

#include "actors/local_messages.h"
#include "messages/envelope_codec.h"

namespace troupe::actors {

Sender::Sender(std::shared_ptr<NodeContext> ctx) : ctx_(std::move(ctx)), outbound_(ctx_->loop) {}

Status Sender::Local(v1::Envelope envelope, at::Tensor tensor) {
  Received m{std::move(envelope), std::move(tensor)};
  std::optional<v1::Envelope> refused =
      DeliverLocal(*ctx_, Origin{0, ctx_->node_id}, std::move(m), false, false, here_ ? here_() : nullptr);
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

Status Sender::PopHop(v1::Step& step) {
  if (step.rest_of_route_size() == 0) {
    return Status::InvalidArgument("step of session " + std::to_string(step.session_id()) + " has no next hop");
  }
  *step.mutable_hop() = step.rest_of_route(0);
  step.mutable_rest_of_route()->erase(step.mutable_rest_of_route()->begin());
  return Status::Ok();
}

Status Sender::ForwardStep(v1::Step step, at::Tensor tensor) {
  TROUPE_RETURN_IF_ERROR(PopHop(step));
  return SendStep(std::move(step), std::move(tensor));
}

std::vector<Status> Sender::ForwardSteps(std::vector<v1::Step> steps, std::vector<at::Tensor> tensors) {
  std::vector<Status> out(steps.size());
  if (tensors.size() != steps.size()) {
    for (Status& st : out) st = Status::Internal("ForwardSteps: tensors and steps differ in number");
    return out;
  }
  // The steps for each other node, in order; this node's go one by one.
  std::vector<std::pair<std::string, std::vector<size_t>>> remote;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (out[i] = PopHop(steps[i]); !out[i].ok()) continue;
    const std::string& node = steps[i].hop().node_id();
    if (node == ctx_->node_id) {
      out[i] = SendStep(std::move(steps[i]), std::move(tensors[i]));
      continue;
    }
    auto group = std::find_if(remote.begin(), remote.end(), [&](const auto& g) { return g.first == node; });
    if (group == remote.end()) group = remote.insert(remote.end(), {node, {}});
    group->second.push_back(i);
  }
  for (const auto& [node, members] : remote) {
    if (members.size() == 1) {
      out[members[0]] = SendStep(std::move(steps[members[0]]), std::move(tensors[members[0]]));
      continue;
    }
    std::vector<v1::Step> burst;
    std::vector<at::Tensor> burst_tensors;
    for (size_t i : members) {
      burst.push_back(std::move(steps[i]));
      burst_tensors.push_back(std::move(tensors[i]));
    }
    const Status st = SendBurst(std::move(burst), burst_tensors);
    for (size_t i : members) out[i] = st;
  }
  return out;
}

Status Sender::SendStep(v1::Step step, at::Tensor tensor) {
  v1::Envelope env = NewEnvelope();
  *env.mutable_step() = std::move(step);
  if (env.step().hop().node_id() == ctx_->node_id) return Local(std::move(env), std::move(tensor));
  return ToHop(env.step().hop(), [&](v1::Dtype dtype, bool last) {
    return last ? EncodeFrames(std::move(env), tensor, dtype) : EncodeFrames(env, tensor, dtype);
  });
}

Status Sender::SendBurst(std::vector<v1::Step> steps, const std::vector<at::Tensor>& tensors) {
  v1::Envelope env = NewEnvelope();
  for (v1::Step& s : steps) *env.mutable_step_burst()->add_steps() = std::move(s);
  Status st = ToHop(env.step_burst().steps(0).hop(), [&](v1::Dtype dtype, bool last) {
    return last ? EncodeBurstFrames(std::move(env), tensors, dtype) : EncodeBurstFrames(env, tensors, dtype);
  });
  if (st.ok()) ctx_->counters.step_bursts_sent_total++;
  return st;
}

Status Sender::ToHop(const v1::RouteHop& hop,
                     const std::function<WireResult<transport::Frames>(v1::Dtype, bool)>& encode) {
  if (ctx_->links->curve()) ctx_->links->LearnKey(hop.node_id(), hop.public_key());
  TROUPE_ASSIGN_OR_RETURN(transport::LinkId link, ctx_->links->ConnectTo(hop.node_id(), hop.endpoint()));
  // `hop` may live in what a last encode consumes: nothing reads it after,
  // hence a copy of its node id.
  const std::string node = hop.node_id();  // NOLINT(performance-unnecessary-copy-initialization)
  const v1::Dtype encoding = hop.encoding();
  const bool int8 = encoding == v1::DTYPE_INT8_BLOCK32;
  WireResult<transport::Frames> frames = encode(encoding, /*last=*/!int8);
  if (!frames.ok() && int8) frames = encode(v1::DTYPE_F32, /*last=*/true);  // e.g. a width not of 32s
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

// Sender: how an actor sends to another stage, node or client — locally
// (a CAF message, no copy) when the addressee is this node, else over the
// node's links through its own transport::Outbound.
//
// Source routing lives here: ForwardStep pops the next hop off
// step.rest_of_route into step.hop and sends the step to that hop's node —
// nothing goes through the scheduler. ForwardSteps does so for a batch's
// steps, sending those bound for the same other node as one StepBurst
// message (one message a hop, not one a session).
//
// Failures come back as a Status (no route, no key for a peer, an unusable
// tensor); messages held back by backpressure are kept in order and resent by
// Retry(). Thread-safety: one actor's own; Close() in the actor's on_exit.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/node_context.h"
#include "messages/frames_codec.h"
#include "messages/origin.h"
#include "messages/troupe.pb.h"
#include "transport/outbound.h"

namespace troupe::actors {

class Sender {
 public:
  explicit Sender(std::shared_ptr<NodeContext> ctx);

  // Sends `step` (with `tensor`, possibly undefined) to step.rest_of_route(0).
  // InvalidArgument for an empty rest of route.
  Status ForwardStep(v1::Step step, at::Tensor tensor);
  // ForwardStep for each of `steps` with tensors[i] (sizes equal), in
  // order; two or more bound for one node other than this one leave as one
  // StepBurst. A status per step.
  std::vector<Status> ForwardSteps(std::vector<v1::Step> steps, std::vector<at::Tensor> tensors);
  // Sends `envelope` to node `node_id` at `endpoint` (a local actor when the
  // node is this one).
  Status ToNode(const std::string& node_id, const std::string& endpoint, v1::Envelope envelope);
  // Answers whoever `to` names (a listener peer, a connection, a local actor,
  // or — Origin{kJobBookLink} — a job's watchers, through the scheduler's job book).
  Status Reply(const Origin& to, v1::Envelope envelope);

  // Where the owning actor's handler runs now (its CAF worker), or null
  // while another thread runs its code: local sends are then scheduled on
  // that worker (DeliverLocal's `here`). Unset: every local send wakes a
  // worker of its own, as anon_send does.
  void SetHere(std::function<caf::execution_unit*()> here) { here_ = std::move(here); }

  bool HasQueued() const { return outbound_.HasQueued(); }
  void Retry();
  void Close() { outbound_.Close(); }

 private:
  // Pops step.rest_of_route(0) into step.hop; InvalidArgument when none.
  static Status PopHop(v1::Step& step);
  // Sends a step whose hop is set, to its node.
  Status SendStep(v1::Step step, at::Tensor tensor);
  // Sends steps whose hops name one other node as one StepBurst.
  Status SendBurst(std::vector<v1::Step> steps, const std::vector<at::Tensor>& tensors);
  // Sends what `encode` makes, in the hop's encoding (f32 when int8 fails),
  // to the hop's node, counting its bytes. `encode(dtype, last)`: `last`
  // says no second try follows, so it may consume what it encodes (no copy
  // of the step on the usual path); `hop` is read only before encoding, so
  // it may live in what `encode` consumes.
  Status ToHop(const v1::RouteHop& hop, const std::function<WireResult<transport::Frames>(v1::Dtype, bool)>& encode);
  Status Deliver(transport::LinkId link, const std::string& peer, v1::Envelope envelope, const at::Tensor& tensor);
  Status Local(v1::Envelope envelope, at::Tensor tensor);
  std::shared_ptr<NodeContext> ctx_;
  std::function<caf::execution_unit*()> here_;
  transport::Outbound outbound_;
};

}  // namespace troupe::actors

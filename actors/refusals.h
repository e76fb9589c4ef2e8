// Refusals: what this node turned away and who turned it away — so that a
// refused node shows up in logs, /metrics and `troupe status` instead of as
// jobs that hang ("refusals are silent", issue 10 item 6).
//
//   this node's ZAP handler refused a handshake   Handshake()
//     -> handshakes_refused_total{address, domain, key, peer}
//   the head refused an announce or coverage query  Announce()
//     -> announces_refused_total{peer, reason}
//   a peer refused this node's key, or handshakes with it keep failing
//     (transport/links.h, LinkTrouble)              AppendTo() reads Links
//     -> link_refusals_total{endpoint, peer}, link_handshake_failures_total{endpoint, peer}
//
// `peer` is the other node (the metrics' own `node` label is the reporting one).
//
// Each label set is counted; Handshake() and Announce() say whether it is
// the first time (log it then, not on every retry). `peer` of a refused
// handshake is the node whose public key it was, when this node's peers (or
// a learned announce) name it, else "unknown".
//
// Thread-safety: every method may be called from any thread (the ZAP
// handler's, the poll loop's, an actor's).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "messages/troupe.pb.h"
#include "transport/links.h"
#include "transport/zap_handler.h"

namespace troupe::actors {

class Refusals {
 public:
  // Returns true the first time this (address, key, domain) is refused.
  bool Handshake(const transport::ZapRefusal& refusal, const std::string& node);
  // `reason`: a short label ("other model", "other weights", "layers", "key");
  // true the first time for this node and reason.
  bool Announce(const std::string& node, const std::string& reason);
  uint64_t handshakes_refused() const;
  uint64_t announces_refused() const;

  // The labeled counters above, and `links`' troubles, into `snapshot`.
  void AppendTo(v1::MetricsSnapshot* snapshot, const transport::Links* links) const;

  // The one-line text a log gives a refused handshake.
  static std::string Describe(const transport::ZapRefusal& refusal, const std::string& node);

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> handshakes_;  // metric key -> count
  std::map<std::string, uint64_t> announces_;
};

// `name{k="v",...}` with values escaped as Prometheus wants them (\\, \", \n).
std::string LabeledName(const std::string& name, const std::map<std::string, std::string>& labels);

}  // namespace troupe::actors

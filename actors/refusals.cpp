#include "actors/refusals.h"

namespace troupe::actors {

std::string LabeledName(const std::string& name, const std::map<std::string, std::string>& labels) {
  std::string out = name + "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ",";
    first = false;
    out += k + "=\"";
    for (char c : v) {
      if (c == '\\') {
        out += "\\\\";
      } else if (c == '"') {
        out += "\\\"";
      } else if (c == '\n') {
        out += "\\n";
      } else {
        out += c;
      }
    }
    out += "\"";
  }
  return out + "}";
}

bool Refusals::Handshake(const transport::ZapRefusal& r, const std::string& node) {
  const std::string key = LabeledName(
      "handshakes_refused_total",
      {{"address", r.address}, {"domain", r.domain}, {"key", r.public_key}, {"peer", node.empty() ? "unknown" : node}});
  std::lock_guard<std::mutex> lock(mu_);
  return ++handshakes_[key] == 1;
}

bool Refusals::Announce(const std::string& node, const std::string& reason) {
  const std::string key = LabeledName("announces_refused_total", {{"peer", node}, {"reason", reason}});
  std::lock_guard<std::mutex> lock(mu_);
  return ++announces_[key] == 1;
}

uint64_t Refusals::handshakes_refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& [k, v] : handshakes_) n += v;
  return n;
}

uint64_t Refusals::announces_refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& [k, v] : announces_) n += v;
  return n;
}

void Refusals::AppendTo(v1::MetricsSnapshot* snapshot, const transport::Links* links) const {
  auto& counters = *snapshot->mutable_counters();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, v] : handshakes_) counters[k] = v;
    for (const auto& [k, v] : announces_) counters[k] = v;
  }
  if (!links) return;
  for (const transport::LinkTrouble& t : links->Troubles()) {
    const std::map<std::string, std::string> labels = {{"endpoint", t.endpoint}, {"peer", t.node_id}};
    if (t.refusals) counters[LabeledName("link_refusals_total", labels)] = t.refusals;
    if (t.failures) counters[LabeledName("link_handshake_failures_total", labels)] = t.failures;
  }
}

std::string Refusals::Describe(const transport::ZapRefusal& r, const std::string& node) {
  std::string who = node.empty() ? "an unknown node" : "node '" + node + "'";
  std::string text = "refused a CURVE handshake from " + (r.address.empty() ? std::string("?") : r.address) + " (" +
                     who + (r.public_key.empty() ? "" : ", key " + r.public_key) + "): " + r.reason;
  if (r.reason == "public key not in allowlist") {
    text += r.domain == "troupe-jobs" ? " — add its node.pub to this head's client_allowlist"
                                      : " — add its node.pub to this node's allowlist";
  }
  return text;
}

}  // namespace troupe::actors

#include "tests/transport/step_server.h"

#include <chrono>
#include <thread>

#include "tests/transport/step_messages.h"

namespace troupe::transport::testing {

ServeReport ServeSteps(Listener& listener, const std::set<std::string>& until_ended, size_t payload_bytes,
                       int timeout_ms) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  ServeReport report;
  auto all_ended = [&] {
    for (const std::string& p : until_ended) {
      auto it = report.peers.find(p);
      if (it == report.peers.end() || !it->second.ended) return false;
    }
    return true;
  };
  while (!all_ended()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      report.timed_out = true;
      break;
    }
    auto in = listener.Receive(static_cast<int>(left.count()));
    if (!in.ok()) continue;
    PeerProgress& p = report.peers[in->peer];
    if (MessageText(in->frames) == "END") {
      Frames ack = TextMessage("ACK " + std::to_string(p.steps));
      Status st;
      for (int i = 0; i < 1000; ++i) {
        st = listener.Send(in->peer, ack);
        if (!IsWouldBlock(st)) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (!st.ok()) report.errors.push_back(in->peer + ": ACK not sent: " + st.ToString());
      p.ended = true;
      continue;
    }
    Status st = CheckStep(in->frames, p.steps, payload_bytes);
    if (!st.ok()) {
      if (report.errors.size() < 20) report.errors.push_back(in->peer + ": " + st.message());
      // Resynchronise on the sequence number so one gap is one error.
      auto seq = StepSeq(in->frames);
      if (seq.ok()) p.steps = *seq + 1;
      continue;
    }
    ++p.steps;
  }
  return report;
}

}  // namespace troupe::transport::testing

#include "pipeline/sampling/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace troupe {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (std::string& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

StopMatcher::Released StopMatcher::Feed(std::string_view piece) {
  Released out;
  if (stopped_) {
    out.stopped = true;
    return out;
  }
  held_.append(piece);

  // A stop string that started in text already released would have been
  // held back, so every complete match lies inside held_.
  size_t first = std::string::npos;
  const std::string* winner = nullptr;
  for (const std::string& stop : stops_) {
    const size_t at = held_.find(stop);
    if (at < first) {
      first = at;
      winner = &stop;
    }
  }
  if (winner != nullptr) {
    out.text = held_.substr(0, first);
    out.stopped = true;
    matched_ = *winner;
    stopped_ = true;
    held_.clear();
    return out;
  }

  const size_t release = held_.size() - PartialMatchLength();
  out.text = held_.substr(0, release);
  held_.erase(0, release);
  return out;
}

std::string StopMatcher::Flush() {
  std::string tail;
  tail.swap(held_);
  return tail;
}

size_t StopMatcher::PartialMatchLength() const {
  const std::string_view held(held_);
  size_t longest = 0;
  for (const std::string& stop : stops_) {
    // Only lengths longer than the best so far can improve it.
    for (size_t len = std::min(held.size(), stop.size() - 1); len > longest; --len) {
      if (held.substr(held.size() - len) == std::string_view(stop).substr(0, len)) {
        longest = len;
        break;
      }
    }
  }
  return longest;
}

}  // namespace troupe

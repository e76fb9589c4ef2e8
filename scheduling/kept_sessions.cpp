#include "scheduling/kept_sessions.h"

#include <utility>

namespace troupe::scheduling {

Status KeptSessions::CheckName(const std::string& name) {
  if (name.empty()) return Status::InvalidArgument("a kept session needs a name");
  if (name.size() > kMaxNameBytes) {
    return Status::InvalidArgument("kept session names have at most " + std::to_string(kMaxNameBytes) + " bytes, got " +
                                   std::to_string(name.size()));
  }
  for (char c : name) {
    if (c < 0x21 || c > 0x7e) {
      return Status::InvalidArgument("kept session names are printable ASCII without spaces");
    }
  }
  return Status::Ok();
}

KeptSession* KeptSessions::Find(const std::string& name) {
  auto it = sessions_.find(name);
  return it == sessions_.end() ? nullptr : &it->second;
}

const KeptSession* KeptSessions::Find(const std::string& name) const {
  auto it = sessions_.find(name);
  return it == sessions_.end() ? nullptr : &it->second;
}

KeptSession* KeptSessions::BoundTo(uint64_t session_id) {
  if (session_id == 0) return nullptr;
  for (auto& [name, s] : sessions_) {
    if (s.session_id == session_id) return &s;
  }
  return nullptr;
}

KeptSession& KeptSessions::Add(KeptSession session) {
  gone_.erase(session.name);
  std::string name = session.name;
  return sessions_[name] = std::move(session);
}

void KeptSessions::Remove(const std::string& name, const std::string& why) {
  // A copy: `name` may be the erased session's own name.
  const std::string key = name;  // NOLINT(performance-unnecessary-copy-initialization)
  if (!sessions_.erase(key)) return;
  if (!gone_.count(key)) gone_order_.push_back(key);
  gone_[key] = why;
  while (gone_order_.size() > kTombstones) {
    gone_.erase(gone_order_.front());
    gone_order_.pop_front();
  }
}

std::string KeptSessions::WhyGone(const std::string& name) const {
  auto it = gone_.find(name);
  if (it == gone_.end()) return "no kept session '" + name + "'";
  return "kept session '" + name + "' " + it->second;
}

}  // namespace troupe::scheduling

#include "transport/outbound.h"

namespace troupe::transport {

Result<Outbox*> Outbound::BoxFor(LinkId link) {
  auto it = boxes_.find(link);
  if (it != boxes_.end()) return it->second.get();
  if (loop_ == nullptr) return Status::Internal("outbound: no poll loop");
  TROUPE_ASSIGN_OR_RETURN(auto box, loop_->OpenOutbox(link));
  Outbox* raw = box.get();
  boxes_[link] = std::move(box);
  return raw;
}

Status Outbound::Send(LinkId link, const std::string& peer, Frames frames) {
  auto& waiting = waiting_[link];
  if (!waiting.empty()) {  // keep order behind what is already waiting
    waiting.emplace_back(peer, std::move(frames));
    ++queued_;
    return Status::Ok();
  }
  const bool here = loop_ != nullptr && loop_->OnLoopThread();  // the loop's own message: onto the link now
  Status st;
  if (here) {
    st = loop_->SendHere(link, peer, frames);
  } else {
    TROUPE_ASSIGN_OR_RETURN(Outbox * box, BoxFor(link));
    st = box->Send(peer, frames);
  }
  if (IsWouldBlock(st)) {
    waiting.emplace_back(peer, std::move(frames));
    ++queued_;
    return Status::Ok();
  }
  if (!st.ok() && !here) boxes_.erase(link);  // a closed link: open afresh if it comes back
  return st;
}

void Outbound::Retry(size_t* dropped) {
  for (auto& [link, waiting] : waiting_) {
    while (!waiting.empty()) {
      Result<Outbox*> box = BoxFor(link);
      Status st = box.ok() ? (*box)->Send(waiting.front().first, waiting.front().second) : box.status();
      if (IsWouldBlock(st)) break;
      if (!st.ok() && dropped) ++*dropped;
      waiting.pop_front();
      --queued_;
    }
  }
}

void Outbound::Close() {
  waiting_.clear();
  queued_ = 0;
  boxes_.clear();
}

}  // namespace troupe::transport

// Origin: where a message came from, and so where its reply goes — the link
// it arrived on (a transport::LinkId: a node's listener or connection) and,
// for a listener, the peer's ZeroMQ routing id. Link 0 is the node itself (a
// local actor standing in for a client or peer); link kJobBookLink is the
// head's job book (scheduling/job_book.h), the client of every job the head
// runs, which copies what it gets to the job's watchers. Plain value.
#pragma once

#include <cstdint>
#include <string>

namespace troupe {

constexpr uint32_t kJobBookLink = 0xffffffffu;

struct Origin {
  uint32_t link = 0;
  std::string peer;

  bool operator==(const Origin& o) const { return link == o.link && peer == o.peer; }
  bool operator!=(const Origin& o) const { return !(*this == o); }
};

}  // namespace troupe

// Origin: where a message came from, and so where its reply goes — the link
// it arrived on (a transport::LinkId: a node's listener or connection) and,
// for a listener, the peer's ZeroMQ routing id. Link 0 is the node itself (a
// local actor standing in for a client or peer). Plain value.
#pragma once

#include <cstdint>
#include <string>

namespace troupe {

struct Origin {
  uint32_t link = 0;
  std::string peer;

  bool operator==(const Origin& o) const { return link == o.link && peer == o.peer; }
  bool operator!=(const Origin& o) const { return !(*this == o); }
};

}  // namespace troupe

// Client: who sent a job or a query, and so where its answers go — the
// link it came in on and, for a listener, the peer's routing id (the
// scheduling mirror of actors::Origin, which carries the same two fields).
// link 0 is the head itself (a local actor standing in for a client).
//
// Plain value.
#pragma once

#include <cstdint>
#include <string>

namespace troupe::scheduling {

struct Client {
  uint32_t link = 0;
  std::string peer;

  bool operator==(const Client& o) const { return link == o.link && peer == o.peer; }
  bool operator!=(const Client& o) const { return !(*this == o); }
};

}  // namespace troupe::scheduling

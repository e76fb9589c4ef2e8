// StreamEntry: one entry of a Redis stream — its id ("1700000000000-0") and
// its field/value pairs in order — and the parsers of the replies that carry
// entries (XREADGROUP, XAUTOCLAIM, XRANGE/XREVRANGE).
//
// An entry deleted (XDEL) while still pending in a group comes back from
// XREADGROUP/XAUTOCLAIM with its id and no fields: `deleted` is then true.
//
// Pure: no sockets. Parsers return kCorrupt naming the command when the
// reply does not have the documented shape.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "broker/redis_reply.h"
#include "pipeline/status.h"

namespace troupe::broker {

using EntryFields = std::vector<std::pair<std::string, std::string>>;

struct StreamEntry {
  std::string id;
  EntryFields fields;
  bool deleted = false;
};

// The value of field `name` (the first, if repeated), or nullptr.
const std::string* FindField(const EntryFields& fields, const std::string& name);

// [[id, [field, value, ...]], ...] — XRANGE, XREVRANGE, and each stream of
// XREADGROUP; a nil fields element marks a deleted entry.
Result<std::vector<StreamEntry>> ParseEntries(const RedisReply& reply);

// XREADGROUP ... STREAMS key id: [[key, entries]] or nil (nothing new).
Result<std::vector<StreamEntry>> ParseReadGroup(const RedisReply& reply);

// XAUTOCLAIM: [next_cursor, entries] (Redis 6.2) or [next_cursor, entries,
// deleted_ids] (Redis 7: deleted entries are listed apart, and already
// removed from the pending list; they come back here with deleted set).
struct AutoClaim {
  std::string next_cursor;  // "0-0": the scan went round the whole pending list
  std::vector<StreamEntry> entries;
};
Result<AutoClaim> ParseAutoClaim(const RedisReply& reply);

}  // namespace troupe::broker

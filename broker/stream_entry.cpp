#include "broker/stream_entry.h"

namespace troupe::broker {

const std::string* FindField(const EntryFields& fields, const std::string& name) {
  for (const auto& [key, value] : fields) {
    if (key == name) return &value;
  }
  return nullptr;
}

Result<std::vector<StreamEntry>> ParseEntries(const RedisReply& reply) {
  if (reply.is_nil()) return std::vector<StreamEntry>{};
  if (!reply.is_array()) return Status::Corrupt("stream entries: not an array");
  std::vector<StreamEntry> out;
  out.reserve(reply.elements.size());
  for (const RedisReply& e : reply.elements) {
    if (!e.is_array() || e.elements.size() != 2 || !e.elements[0].is_string()) {
      return Status::Corrupt("stream entries: an entry is not [id, fields]");
    }
    StreamEntry entry;
    entry.id = e.elements[0].str;
    const RedisReply& fields = e.elements[1];
    if (fields.is_nil()) {
      entry.deleted = true;
    } else {
      if (!fields.is_array() || fields.elements.size() % 2 != 0) {
        return Status::Corrupt("stream entries: entry " + entry.id + "'s fields are not field/value pairs");
      }
      for (size_t i = 0; i < fields.elements.size(); i += 2) {
        if (!fields.elements[i].is_string() || !fields.elements[i + 1].is_string()) {
          return Status::Corrupt("stream entries: entry " + entry.id + " has a field that is not a string");
        }
        entry.fields.emplace_back(fields.elements[i].str, fields.elements[i + 1].str);
      }
    }
    out.push_back(std::move(entry));
  }
  return out;
}

Result<std::vector<StreamEntry>> ParseReadGroup(const RedisReply& reply) {
  if (reply.is_nil()) return std::vector<StreamEntry>{};
  if (!reply.is_array()) return Status::Corrupt("XREADGROUP: not an array");
  std::vector<StreamEntry> out;
  for (const RedisReply& stream : reply.elements) {
    if (!stream.is_array() || stream.elements.size() != 2) return Status::Corrupt("XREADGROUP: not [key, entries]");
    TROUPE_ASSIGN_OR_RETURN(std::vector<StreamEntry> entries, ParseEntries(stream.elements[1]));
    for (StreamEntry& e : entries) out.push_back(std::move(e));
  }
  return out;
}

Result<AutoClaim> ParseAutoClaim(const RedisReply& reply) {
  if (!reply.is_array() || reply.elements.size() < 2 || !reply.elements[0].is_string()) {
    return Status::Corrupt("XAUTOCLAIM: not [cursor, entries, ...]");
  }
  AutoClaim out;
  out.next_cursor = reply.elements[0].str;
  TROUPE_ASSIGN_OR_RETURN(out.entries, ParseEntries(reply.elements[1]));
  if (reply.elements.size() >= 3 && reply.elements[2].is_array()) {
    for (const RedisReply& id : reply.elements[2].elements) {
      if (!id.is_string()) return Status::Corrupt("XAUTOCLAIM: a deleted id is not a string");
      StreamEntry gone;
      gone.id = id.str;
      gone.deleted = true;
      out.entries.push_back(std::move(gone));
    }
  }
  return out;
}

}  // namespace troupe::broker

// Envelope codec: the header frame of every message, bytes <-> v1::Envelope.
//
// DecodeEnvelope checks, in this order, and reports the first failure:
//   size > max_bytes                             OVERSIZED
//   the bytes do not parse as an Envelope        BAD_HEADER
//   protocol_version != kProtocolVersion         VERSION_MISMATCH
//   no body, or a body this build does not know  UNKNOWN_TYPE
// (A body from a newer schema parses as an unknown field, so it arrives here
// as "no body".) It validates the envelope, not the body's values: sessions,
// routes and sampling parameters are the receiving actor's business.
//
// Pure functions, thread-safe. Protobuf may log (not throw) on invalid UTF-8
// in a string field; such a header is BAD_HEADER.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "messages/protocol.h"
#include "messages/troupe.pb.h"
#include "messages/wire_error.h"

namespace troupe {

// An empty envelope stamped with kProtocolVersion.
v1::Envelope NewEnvelope(uint64_t request_id = 0);

// An Error envelope: `code`, `text`, the reporting node and, when non-zero,
// the session, request and job ids.
v1::Envelope ErrorEnvelope(v1::ErrorCode code, const std::string& text, const std::string& node_id,
                           uint64_t session_id = 0, uint64_t request_id = 0, uint64_t job_id = 0);

// The header frame bytes, exactly as given (the version is not stamped: use
// NewEnvelope or EncodeMessage).
std::string EncodeEnvelope(const v1::Envelope& envelope);

WireResult<v1::Envelope> DecodeEnvelope(const void* data, size_t size, size_t max_bytes);

// The body's field name ("step", "session_open", ...), or "none".
const char* BodyName(const v1::Envelope& envelope);

}  // namespace troupe

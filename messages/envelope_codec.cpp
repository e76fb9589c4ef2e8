#include "messages/envelope_codec.h"

#include <climits>

namespace troupe {

v1::Envelope NewEnvelope(uint64_t request_id) {
  v1::Envelope envelope;
  envelope.set_protocol_version(kProtocolVersion);
  envelope.set_request_id(request_id);
  return envelope;
}

v1::Envelope ErrorEnvelope(v1::ErrorCode code, const std::string& text, const std::string& node_id, uint64_t session_id,
                           uint64_t request_id, uint64_t job_id) {
  v1::Envelope env = NewEnvelope(request_id);
  v1::Error* e = env.mutable_error();
  e->set_code(code);
  e->set_text(text);
  e->set_node_id(node_id);
  if (session_id != 0) e->set_session_id(session_id);
  if (job_id != 0) e->set_job_id(job_id);
  return env;
}

std::string EncodeEnvelope(const v1::Envelope& envelope) {
  std::string bytes;
  envelope.SerializeToString(&bytes);
  return bytes;
}

WireResult<v1::Envelope> DecodeEnvelope(const void* data, size_t size, size_t max_bytes) {
  if (size > max_bytes || size > static_cast<size_t>(INT_MAX)) {
    return WireError{v1::OVERSIZED, "header frame of " + std::to_string(size) + " bytes exceeds the " +
                                        std::to_string(max_bytes) + "-byte limit"};
  }
  v1::Envelope envelope;
  if (!envelope.ParseFromArray(data, static_cast<int>(size))) {
    return WireError{v1::BAD_HEADER, "header frame (" + std::to_string(size) + " bytes) is not an Envelope"};
  }
  if (envelope.protocol_version() != kProtocolVersion) {
    return WireError{v1::VERSION_MISMATCH, "protocol version " + std::to_string(envelope.protocol_version()) +
                                               ", this node speaks " + std::to_string(kProtocolVersion)};
  }
  if (envelope.body_case() == v1::Envelope::BODY_NOT_SET) {
    return WireError{v1::UNKNOWN_TYPE, "envelope has no body this node knows"};
  }
  return envelope;
}

const char* BodyName(const v1::Envelope& envelope) {
  if (envelope.body_case() == v1::Envelope::BODY_NOT_SET) return "none";
  const google::protobuf::FieldDescriptor* field = v1::Envelope::descriptor()->FindFieldByNumber(envelope.body_case());
  return field ? field->name().c_str() : "none";
}

}  // namespace troupe

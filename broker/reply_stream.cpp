#include "broker/reply_stream.h"

#include <google/protobuf/util/json_util.h>

#include <cstdlib>

#include "messages/finish_reason_proto.h"

namespace troupe::broker {
namespace {

std::string Json(const google::protobuf::Message& m) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;  // index 0, eos false: every key, every time
  (void)google::protobuf::util::MessageToJsonString(m, &json, options);
  return json;
}

EntryFields Head(const char* type, const std::string& entry_id, uint64_t job_id) {
  return {{"type", type}, {"entry", entry_id}, {"job_id", std::to_string(job_id)}};
}

}  // namespace

EntryFields TokenFields(const std::string& entry_id, uint64_t job_id, const v1::Token& token) {
  EntryFields f = Head("token", entry_id, job_id);
  f.emplace_back("index", std::to_string(token.index()));
  f.emplace_back("token_id", std::to_string(token.token_id()));
  f.emplace_back("text", token.text());
  f.emplace_back("eos", token.eos() ? "true" : "false");
  f.emplace_back("token", Json(token));
  return f;
}

EntryFields PromptLogprobsFields(const std::string& entry_id, uint64_t job_id, const v1::PromptLogprobs& logprobs) {
  EntryFields f = Head("prompt_logprobs", entry_id, job_id);
  f.emplace_back("prompt_logprobs", Json(logprobs));
  return f;
}

EntryFields FinishFields(const std::string& entry_id, uint64_t job_id, const v1::Finish& finish) {
  EntryFields f = Head("finish", entry_id, job_id);
  f.emplace_back("reason", finish_reason_name(FinishReasonFromProto(finish.reason())));
  f.emplace_back("generated_tokens", std::to_string(finish.generated_tokens()));
  f.emplace_back("finish", Json(finish));
  return f;
}

EntryFields ErrorFields(const std::string& entry_id, uint64_t job_id, const std::string& code_name,
                        const std::string& text) {
  EntryFields f = Head("error", entry_id, job_id);
  f.emplace_back("code", code_name);
  f.emplace_back("text", text);
  return f;
}

bool IsReplyOf(const EntryFields& fields, const std::string& entry_id) {
  const std::string* entry = FindField(fields, "entry");
  return entry && *entry == entry_id && FindField(fields, "type");
}

Result<ReplyProgress> ReplyProgress::FromLastEntry(const EntryFields* last) {
  ReplyProgress p;
  if (!last) return p;
  const std::string* type = FindField(*last, "type");
  if (!type) return Status::Corrupt("reply entry without a 'type' field");
  p.any_published_ = true;
  if (*type == "finish" || *type == "error") {
    p.done_ = true;
  } else if (*type == "token") {
    const std::string* index = FindField(*last, "index");
    char* end = nullptr;
    const unsigned long long v = index ? std::strtoull(index->c_str(), &end, 10) : 0;
    if (!index || index->empty() || *end != '\0' || v >= UINT32_MAX) {
      return Status::Corrupt("reply token entry with a bad 'index' field");
    }
    p.next_index_ = static_cast<uint32_t>(v) + 1;
  } else if (*type != "prompt_logprobs") {
    return Status::Corrupt("reply entry of unknown type '" + *type + "'");
  }
  return p;
}

Result<bool> ReplyProgress::ShouldPublishToken(uint32_t index) const {
  if (done_ || index < next_index_) return false;
  if (index > next_index_) {
    return Status::Corrupt("token " + std::to_string(index) + " came where token " + std::to_string(next_index_) +
                           " was due");
  }
  return true;
}

void ReplyProgress::PublishedToken() {
  ++next_index_;
  any_published_ = true;
}

}  // namespace troupe::broker

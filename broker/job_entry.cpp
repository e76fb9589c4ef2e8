#include "broker/job_entry.h"

#include <google/protobuf/util/json_util.h>

namespace troupe::broker {

std::string DefaultReplyStream(const std::string& entry_id) { return "troupe:reply:" + entry_id; }

uint64_t DeriveJobId(const std::string& stream, const std::string& entry_id) {
  uint64_t h = 14695981039346656037ULL;  // FNV-1a 64
  auto mix = [&h](const std::string& s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ULL;
    }
  };
  mix(stream);
  mix("\n");
  mix(entry_id);
  h &= (uint64_t{1} << 53) - 1;
  return h == 0 ? 1 : h;
}

JobEntry ParseJobEntry(const std::string& stream, const StreamEntry& entry) {
  JobEntry out;
  out.entry_id = entry.id;
  out.reply = DefaultReplyStream(entry.id);
  out.job_id = DeriveJobId(stream, entry.id);
  auto bad = [&out](const std::string& why) {
    out.problem = Status::InvalidArgument("job entry " + out.entry_id + ": " + why);
    return out;
  };
  if (const std::string* reply = FindField(entry.fields, "reply")) {
    if (reply->empty()) return bad("'reply' is empty (leave it out for the default " + out.reply + ")");
    out.reply = *reply;
  }
  for (const auto& [key, value] : entry.fields) {
    if (key != "job" && key != "reply") return bad("unknown field '" + key + "' (known: job, reply)");
  }
  const std::string* json = FindField(entry.fields, "job");
  if (!json) return bad("no 'job' field (the JobSubmit as JSON)");
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  v1::JobSubmit job;
  const auto st = google::protobuf::util::JsonStringToMessage(*json, &job, options);
  if (!st.ok()) {
    std::string why(st.message());  // protobuf's parser points at the spot over several lines
    for (char& c : why) c = (c == '\n') ? ' ' : c;
    return bad("'job' is not a JobSubmit in JSON: " + why);
  }
  if (job.job_id() != 0) out.job_id = job.job_id();
  job.set_job_id(out.job_id);
  // Unset, the head would derive the seed from its session, new on every run.
  if (!job.sampling().has_seed()) job.mutable_sampling()->set_seed(out.job_id);
  job.set_stream(true);
  out.job = std::move(job);
  return out;
}

EntryFields JobEntryFields(const v1::JobSubmit& job, const std::string& reply) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(job, &json, options);
  EntryFields fields{{"job", json}};
  if (!reply.empty()) fields.emplace_back("reply", reply);
  return fields;
}

}  // namespace troupe::broker

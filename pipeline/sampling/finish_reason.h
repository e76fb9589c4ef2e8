// FinishReason: why an answer ended — an eos token (end of sequence or end of
// turn), a stop string, or its length limit (max_tokens, or the session's
// max_length). The names are those of `troupe generate/submit --json`
// ("eos", "stop", "length"); the wire mirror and its one mapping are in
// messages/finish_reason_proto.h. Pure values, thread-safe.
#pragma once

namespace troupe {

enum class FinishReason { kNone, kEos, kStop, kLength };

// "eos", "stop", "length" ("none" while running).
const char* finish_reason_name(FinishReason reason);

}  // namespace troupe

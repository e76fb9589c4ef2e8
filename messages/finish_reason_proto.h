// FinishReason (pipeline/sampling/finish_reason.h) <-> its wire mirror
// v1::FinishReason: the one place the two are mapped. Pure functions.
#pragma once

#include "messages/troupe.pb.h"
#include "pipeline/sampling/finish_reason.h"

namespace troupe {

// kNone (still running) has no wire value: it maps to FINISH_REASON_UNSPECIFIED.
v1::FinishReason FinishReasonToProto(FinishReason reason);
// An unknown or unspecified value reads as kLength (the answer stopped short).
FinishReason FinishReasonFromProto(v1::FinishReason reason);

}  // namespace troupe

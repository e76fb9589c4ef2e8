// SamplingParams (pipeline/sampling/sampling_params.h) <-> its wire mirror
// v1::SamplingParams. Every wire field is optional: an unset field means the
// C++ default, so an empty message is greedy decoding with default limits.
// Pure functions, thread-safe.
#pragma once

#include "messages/troupe.pb.h"
#include "messages/wire_error.h"
#include "pipeline/sampling/sampling_params.h"

namespace troupe {

// Sets every field (seed included).
v1::SamplingParams SamplingParamsToProto(const SamplingParams& params);

// Fills unset fields with the defaults and validates the result:
// BAD_REQUEST with SamplingParams::Validate's text when a value is unusable.
// An unset seed stays 0; callers that derive seeds check has_seed() first.
WireResult<SamplingParams> SamplingParamsFromProto(const v1::SamplingParams& proto);

}  // namespace troupe

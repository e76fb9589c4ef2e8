// Protocol constants and the limits a receiver enforces on inbound messages.
//
// Every Envelope carries kProtocolVersion; a receiver accepts exactly its own
// version. DecodeLimits is plain data, copied freely; the defaults suit the
// default model (a [8192, 576] f32 prefill is 18.9 MB) with room to spare.
#pragma once

#include <cstddef>
#include <cstdint>

namespace troupe {

// Bump when a change would be misread by nodes of the previous version.
constexpr uint32_t kProtocolVersion = 1;

// Steps in one StepBurst at most (a stage's batch holds fewer sessions).
constexpr int kMaxBurstSteps = 1024;

// Tensor rank and dimension bounds (inclusive).
constexpr int kMaxTensorRank = 4;
constexpr int64_t kMaxTensorDim = int64_t{1} << 31;

struct DecodeLimits {
  size_t max_header_bytes = size_t{4} << 20;  // 4 MiB: long prompts and chats
  size_t max_tensor_bytes = size_t{1} << 30;  // 1 GiB: all-position logits
  bool reject_non_finite = true;              // NaN/Inf in a tensor -> NON_FINITE
};

}  // namespace troupe

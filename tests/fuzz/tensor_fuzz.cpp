// libFuzzer target: tensor descriptions and raw frames through
// MakeTensorFrame, DecodeTensorFrame and back through the encoders. Input
// layout: fuzz_input.h. Properties checked (a violation aborts): FindNonFinite
// agrees with the decoded values; f32/bf16/f16 frames of finite values
// re-encode to the same bytes; int8 frames re-encode within half a scale.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "messages/tensor_encoding.h"
#include "messages/tensor_frame.h"
#include "pipeline/quant/half.h"
#include "tests/fuzz/fuzz_input.h"

namespace troupe::fuzz {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tensor_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

void CheckReencode(const TensorFrame& frame, const std::vector<float>& values) {
  WireResult<TensorFrame> again = EncodeTensorFrame(frame.dtype, frame.shape, values.data());
  if (frame.dtype != v1::DTYPE_INT8_BLOCK32) {
    Check(again.ok(), "finite float frames re-encode");
    Check(again->size == frame.size && std::memcmp(again->data, frame.data, frame.size) == 0,
          "finite float frames re-encode to the same bytes");
    return;
  }
  if (!again.ok()) {
    // q = -128 at the largest scale is beyond what the encoder produces.
    float amax = 0.0f;
    for (float v : values) amax = std::max(amax, std::fabs(v));
    Check(again.error().code == v1::BAD_TENSOR && amax / 127.0f > 65504.0f,
          "int8 re-encoding fails only on scale overflow");
    return;
  }
  const std::vector<float> round = DecodeTensorFrame(*again);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t d_bits;
    std::memcpy(&d_bits, again->data + (i / kInt8BlockValues) * kInt8BlockBytes, 2);
    const float d = Fp16ToFp32(d_bits);
    Check(std::fabs(round[i] - values[i]) <= d * 0.5f * (1.0f + 1e-6f), "int8 re-encoding is within half a scale");
  }
}

}  // namespace
}  // namespace troupe::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  const std::optional<fuzz::TensorInput> in = fuzz::ParseTensorInput(data, size);
  if (!in) return 0;
  DecodeLimits limits;
  limits.max_tensor_bytes = size_t{1} << 20;
  limits.reject_non_finite = in->reject_non_finite;
  WireResult<TensorFrame> frame = MakeTensorFrame(in->desc, in->frame, in->size, nullptr, limits);
  if (!frame.ok()) {
    fuzz::Check(!frame.error().text.empty(), "a rejection names the problem");
    return 0;
  }
  const std::vector<float> values = DecodeTensorFrame(*frame);
  fuzz::Check(values.size() == static_cast<size_t>(frame->numel()), "one value per element");
  const int64_t first_bad = FindNonFinite(frame->dtype, frame->data, frame->numel());
  fuzz::Check(!(limits.reject_non_finite && first_bad >= 0), "accepted frames are finite");
  bool all_finite = true;
  for (size_t i = 0; i < values.size(); ++i) {
    const bool finite = std::isfinite(values[i]);
    if (first_bad < 0 || static_cast<int64_t>(i) < first_bad) {
      fuzz::Check(finite, "no NaN/Inf before the first one reported");
    } else if (static_cast<int64_t>(i) == first_bad) {
      fuzz::Check(!finite, "the reported value is NaN/Inf");
    }
    all_finite &= finite;
  }
  if (all_finite) fuzz::CheckReencode(*frame, values);
  return 0;
}

#include "messages/tensor_encoding.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "pipeline/quant/blocks.h"
#include "pipeline/quant/half.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "frames are little-endian; so must be the host");

namespace troupe {
namespace {

static_assert(sizeof(BlockQ8_0) == kInt8BlockBytes && kQk == kInt8BlockValues, "INT8_BLOCK32 is the ggml Q8_0 block");

// Values per chunk of the non-finite scan: a branch-free pass per chunk
// (vectorizable), then an exact search only in a chunk that has a hit.
constexpr int64_t kScanChunk = 1024;

uint16_t Load16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void Store16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, sizeof v); }

WireError Error(v1::ErrorCode code, std::string text) { return WireError{code, std::move(text)}; }

// Smallest binary16 >= x, for finite x >= 0; nullopt when that overflows.
std::optional<uint16_t> Fp16RoundUp(float x) {
  uint16_t h = Fp32ToFp16(x);
  if (Fp16ToFp32(h) < x) ++h;  // next binary16 up: positive encodings are ordered
  if ((h & 0x7C00u) == 0x7C00u) return std::nullopt;
  return h;
}

std::optional<WireError> EncodeInt8(const float* src, int64_t numel, uint8_t* dst) {
  for (int64_t begin = 0; begin < numel; begin += kInt8BlockValues, dst += kInt8BlockBytes) {
    const int64_t n = std::min(kInt8BlockValues, numel - begin);
    const float* x = src + begin;
    float amax = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      if (!std::isfinite(x[j])) {
        return Error(v1::NON_FINITE, "value " + std::to_string(x[j]) + " at index " + std::to_string(begin + j) +
                                         " has no int8_block32 encoding");
      }
      amax = std::max(amax, std::fabs(x[j]));
    }
    const std::optional<uint16_t> d_bits = Fp16RoundUp(amax / 127.0f);
    if (!d_bits) {
      return Error(v1::BAD_TENSOR, "block at index " + std::to_string(begin) +
                                       " has max |x| = " + std::to_string(amax) + ": its int8 scale overflows f16");
    }
    const float d = Fp16ToFp32(*d_bits);
    Store16(dst, *d_bits);
    int8_t* q = reinterpret_cast<int8_t*>(dst + 2);
    for (int64_t j = 0; j < kInt8BlockValues; ++j) {
      float v = 0.0f;
      if (j < n && d > 0.0f) v = std::clamp(std::nearbyint(x[j] / d), -127.0f, 127.0f);
      q[j] = static_cast<int8_t>(v);
    }
  }
  return std::nullopt;
}

void DecodeInt8(const uint8_t* src, int64_t numel, float* dst) {
  for (int64_t begin = 0; begin < numel; begin += kInt8BlockValues, src += kInt8BlockBytes) {
    const int64_t n = std::min(kInt8BlockValues, numel - begin);
    const float d = Fp16ToFp32(Load16(src));
    const int8_t* q = reinterpret_cast<const int8_t*>(src + 2);
    for (int64_t j = 0; j < n; ++j) dst[begin + j] = static_cast<float>(q[j]) * d;
  }
}

// First index in [0, n) whose 16- or 32-bit word has all `mask` bits set.
template <class Word, Word (*Load)(const uint8_t*)>
int64_t FindAllOnes(const uint8_t* src, int64_t n, Word mask) {
  for (int64_t begin = 0; begin < n; begin += kScanChunk) {
    const int64_t end = std::min(n, begin + kScanChunk);
    bool any = false;
    for (int64_t i = begin; i < end; ++i) any |= (Load(src + i * sizeof(Word)) & mask) == mask;
    if (!any) continue;
    for (int64_t i = begin; i < end; ++i) {
      if ((Load(src + i * sizeof(Word)) & mask) == mask) return i;
    }
  }
  return -1;
}

}  // namespace

bool DtypeKnown(v1::Dtype dtype) {
  switch (dtype) {
    case v1::DTYPE_F32:
    case v1::DTYPE_BF16:
    case v1::DTYPE_F16:
    case v1::DTYPE_INT8_BLOCK32: return true;
    default: return false;
  }
}

std::string DtypeName(v1::Dtype dtype) {
  switch (dtype) {
    case v1::DTYPE_F32: return "f32";
    case v1::DTYPE_BF16: return "bf16";
    case v1::DTYPE_F16: return "f16";
    case v1::DTYPE_INT8_BLOCK32: return "int8_block32";
    default: return "dtype(" + std::to_string(static_cast<int>(dtype)) + ")";
  }
}

std::optional<size_t> EncodedBytes(v1::Dtype dtype, int64_t numel) {
  if (numel < 0) return std::nullopt;
  const auto n = static_cast<uint64_t>(numel);
  uint64_t units = n;
  uint64_t unit_bytes = 0;
  switch (dtype) {
    case v1::DTYPE_F32: unit_bytes = 4; break;
    case v1::DTYPE_BF16:
    case v1::DTYPE_F16: unit_bytes = 2; break;
    case v1::DTYPE_INT8_BLOCK32:
      units = n / kInt8BlockValues + (n % kInt8BlockValues != 0);
      unit_bytes = kInt8BlockBytes;
      break;
    default: return std::nullopt;
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(units, unit_bytes, &bytes) || bytes > std::numeric_limits<size_t>::max()) {
    return std::nullopt;
  }
  return static_cast<size_t>(bytes);
}

std::optional<WireError> EncodeValues(v1::Dtype dtype, const float* src, int64_t numel, uint8_t* dst) {
  switch (dtype) {
    case v1::DTYPE_F32:
      if (numel > 0) std::memcpy(dst, src, static_cast<size_t>(numel) * sizeof(float));
      return std::nullopt;
    case v1::DTYPE_BF16:
      for (int64_t i = 0; i < numel; ++i) Store16(dst + 2 * i, Fp32ToBf16(src[i]));
      return std::nullopt;
    case v1::DTYPE_F16:
      for (int64_t i = 0; i < numel; ++i) {
        const uint16_t h = Fp32ToFp16(src[i]);
        if ((h & 0x7C00u) == 0x7C00u && std::isfinite(src[i])) {
          return Error(v1::BAD_TENSOR, "value " + std::to_string(src[i]) + " at index " + std::to_string(i) +
                                           " overflows f16 (max 65504)");
        }
        Store16(dst + 2 * i, h);
      }
      return std::nullopt;
    case v1::DTYPE_INT8_BLOCK32: return EncodeInt8(src, numel, dst);
    default: return Error(v1::BAD_TENSOR, "cannot encode to unknown " + DtypeName(dtype));
  }
}

void DecodeValues(v1::Dtype dtype, const uint8_t* src, int64_t numel, float* dst) {
  switch (dtype) {
    case v1::DTYPE_F32:
      if (numel > 0) std::memcpy(dst, src, static_cast<size_t>(numel) * sizeof(float));
      return;
    case v1::DTYPE_BF16:
      for (int64_t i = 0; i < numel; ++i) dst[i] = Bf16ToFp32(Load16(src + 2 * i));
      return;
    case v1::DTYPE_F16:
      for (int64_t i = 0; i < numel; ++i) dst[i] = Fp16ToFp32(Load16(src + 2 * i));
      return;
    case v1::DTYPE_INT8_BLOCK32: DecodeInt8(src, numel, dst); return;
    default: return;
  }
}

int64_t FindNonFinite(v1::Dtype dtype, const uint8_t* src, int64_t numel) {
  switch (dtype) {
    case v1::DTYPE_F32: return FindAllOnes<uint32_t, Load32>(src, numel, 0x7F800000u);
    case v1::DTYPE_BF16: return FindAllOnes<uint16_t, Load16>(src, numel, 0x7F80u);
    case v1::DTYPE_F16: return FindAllOnes<uint16_t, Load16>(src, numel, 0x7C00u);
    case v1::DTYPE_INT8_BLOCK32:
      for (int64_t begin = 0; begin < numel; begin += kInt8BlockValues, src += kInt8BlockBytes) {
        if ((Load16(src) & 0x7C00u) == 0x7C00u) return begin;
      }
      return -1;
    default: return -1;
  }
}

}  // namespace troupe

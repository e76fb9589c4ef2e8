// Tensor encodings: the byte layout of a raw tensor frame, and conversions
// between it and fp32 values. Torch-free (raw buffers), so the fuzzer and
// non-torch builds use it directly; messages/tensor_codec.h adapts at::Tensor.
//
// A frame holds numel values of a row-major tensor, flattened, little-endian,
// no header and no padding between values (dtype and shape travel in the
// Envelope's TensorDesc):
//
//   DTYPE_F32           numel x 4 bytes, IEEE binary32.
//   DTYPE_BF16          numel x 2 bytes, bfloat16 (top half of a binary32);
//                       encoded round-to-nearest-even, rel. error <= 2^-8.
//   DTYPE_F16           numel x 2 bytes, IEEE binary16, round-to-nearest-even,
//                       rel. error <= 2^-11 for |x| in [2^-14, 65504].
//   DTYPE_INT8_BLOCK32  ceil(numel / 32) blocks of 34 bytes, the ggml Q8_0
//                       layout (pipeline/quant/blocks.h BlockQ8_0):
//                         bytes 0-1   scale d, binary16
//                         bytes 2-33  q[0..31], int8 (two's complement)
//                       value 32*b + j = q[j] * d. The flattened tensor is cut
//                       into blocks in order; the last block is padded with
//                       q = 0 (padding is ignored on decode). The encoder
//                       takes d = max|x| / 127 rounded *up* to a binary16 and
//                       q = round(x / d) in [-127, 127], so every value is
//                       within d / 2 of its input.
//
// Failure cases (encoding): INT8 and F16 cannot represent a finite input
// that overflows them (|x| > 65504 for F16, max|x| / 127 > 65504 for INT8),
// and INT8 cannot carry NaN or Inf: these return BAD_TENSOR / NON_FINITE.
// F32, BF16 and F16 carry NaN and Inf through unchanged.
// All functions are pure and thread-safe; buffers need no alignment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "messages/troupe.pb.h"
#include "messages/wire_error.h"

namespace troupe {

constexpr int64_t kInt8BlockValues = 32;
constexpr int64_t kInt8BlockBytes = 34;

// True for the four dtypes above.
bool DtypeKnown(v1::Dtype dtype);
// "f32", "bf16", "f16", "int8_block32", or "dtype(<n>)" for anything else.
std::string DtypeName(v1::Dtype dtype);

// Bytes of a frame holding `numel` values (numel >= 0), or nullopt when the
// dtype is unknown or the size overflows size_t.
std::optional<size_t> EncodedBytes(v1::Dtype dtype, int64_t numel);

// Writes the frame for src[0..numel) into dst (EncodedBytes(dtype, numel)
// bytes). Returns nullopt on success, else the error (listed above); dst is
// then unspecified.
std::optional<WireError> EncodeValues(v1::Dtype dtype, const float* src, int64_t numel, uint8_t* dst);

// Expands a frame of `numel` values (EncodedBytes bytes at src) to fp32.
// Precondition: dtype is known. Never fails; NaN/Inf pass through.
void DecodeValues(v1::Dtype dtype, const uint8_t* src, int64_t numel, float* dst);

// Index of the first NaN or Inf value the frame decodes to, or -1. For INT8
// that is the first value of the first block whose scale is not finite.
// Precondition: dtype is known.
int64_t FindNonFinite(v1::Dtype dtype, const uint8_t* src, int64_t numel);

}  // namespace troupe

// dequantize(): block formats -> fp32, one scalar routine per type.
//
// The arithmetic (operation order, fp32 intermediates) follows the formulas in
// blocks.h term by term so the values equal ggml's dequantize_row_* outputs.

#include <cstring>

#include "pipeline/quant/blocks.h"
#include "pipeline/quant/half.h"
#include "pipeline/quant/qmatrix.h"

namespace troupe {
namespace {

uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void DequantizeQ4_0(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, src += sizeof(BlockQ4_0), dst += kQk) {
    BlockQ4_0 blk;
    std::memcpy(&blk, src, sizeof blk);
    const float d = Fp16ToFp32(blk.d);
    for (int j = 0; j < kQk / 2; ++j) {
      dst[j] = static_cast<float>((blk.qs[j] & 0x0F) - 8) * d;
      dst[j + kQk / 2] = static_cast<float>((blk.qs[j] >> 4) - 8) * d;
    }
  }
}

void DequantizeQ5_0(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, src += sizeof(BlockQ5_0), dst += kQk) {
    BlockQ5_0 blk;
    std::memcpy(&blk, src, sizeof blk);
    const float d = Fp16ToFp32(blk.d);
    uint32_t qh;
    std::memcpy(&qh, blk.qh, sizeof qh);
    for (int j = 0; j < kQk / 2; ++j) {
      const int lo = static_cast<int>((blk.qs[j] & 0x0F) | ((qh >> j) & 1u) << 4) - 16;
      const int hi = static_cast<int>((blk.qs[j] >> 4) | ((qh >> (j + 16)) & 1u) << 4) - 16;
      dst[j] = static_cast<float>(lo) * d;
      dst[j + kQk / 2] = static_cast<float>(hi) * d;
    }
  }
}

void DequantizeQ4_1(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, src += sizeof(BlockQ4_1), dst += kQk) {
    BlockQ4_1 blk;
    std::memcpy(&blk, src, sizeof blk);
    const float d = Fp16ToFp32(blk.d);
    const float m = Fp16ToFp32(blk.m);
    for (int j = 0; j < kQk / 2; ++j) {
      dst[j] = static_cast<float>(blk.qs[j] & 0x0F) * d + m;
      dst[j + kQk / 2] = static_cast<float>(blk.qs[j] >> 4) * d + m;
    }
  }
}

void DequantizeQ8_0(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, src += sizeof(BlockQ8_0), dst += kQk) {
    BlockQ8_0 blk;
    std::memcpy(&blk, src, sizeof blk);
    const float d = Fp16ToFp32(blk.d);
    for (int j = 0; j < kQk; ++j) dst[j] = static_cast<float>(blk.qs[j]) * d;
  }
}

void DequantizeQ4K(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, src += sizeof(BlockQ4K), dst += kQkK) {
    BlockQ4K blk;
    std::memcpy(&blk, src, sizeof blk);
    const float d = Fp16ToFp32(blk.d);
    const float dmin = Fp16ToFp32(blk.dmin);
    uint8_t sc[8], m[8];
    UnpackQ4KScales(blk.scales, sc, m);
    for (int c = 0; c < 4; ++c) {
      const float d_lo = d * sc[2 * c], m_lo = dmin * m[2 * c];
      const float d_hi = d * sc[2 * c + 1], m_hi = dmin * m[2 * c + 1];
      const uint8_t* q = blk.qs + 32 * c;
      float* y = dst + 64 * c;
      for (int l = 0; l < 32; ++l) {
        y[l] = d_lo * static_cast<float>(q[l] & 0x0F) - m_lo;
        y[l + 32] = d_hi * static_cast<float>(q[l] >> 4) - m_hi;
      }
    }
  }
}

void DequantizeQ5K(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, src += sizeof(BlockQ5K), dst += kQkK) {
    BlockQ5K blk;
    std::memcpy(&blk, src, sizeof blk);
    const float d = Fp16ToFp32(blk.d);
    const float dmin = Fp16ToFp32(blk.dmin);
    uint8_t sc[8], m[8];
    UnpackQ4KScales(blk.scales, sc, m);
    for (int c = 0; c < 4; ++c) {
      const float d_lo = d * sc[2 * c], m_lo = dmin * m[2 * c];
      const float d_hi = d * sc[2 * c + 1], m_hi = dmin * m[2 * c + 1];
      const uint8_t* q = blk.qs + 32 * c;
      float* y = dst + 64 * c;
      for (int l = 0; l < 32; ++l) {
        const int lo = (q[l] & 0x0F) + 16 * ((blk.qh[l] >> (2 * c)) & 1);
        const int hi = (q[l] >> 4) + 16 * ((blk.qh[l] >> (2 * c + 1)) & 1);
        y[l] = d_lo * static_cast<float>(lo) - m_lo;
        y[l + 32] = d_hi * static_cast<float>(hi) - m_hi;
      }
    }
  }
}

void DequantizeQ6K(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, src += sizeof(BlockQ6K), dst += kQkK) {
    BlockQ6K blk;
    std::memcpy(&blk, src, sizeof blk);
    const float d = Fp16ToFp32(blk.d);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = blk.ql + 64 * h;
      const uint8_t* qh = blk.qh + 32 * h;
      const int8_t* sc = blk.scales + 8 * h;
      float* y = dst + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int s = l / 16;
        const int q0 = ((ql[l] & 0x0F) | ((qh[l] >> 0) & 3) << 4) - 32;
        const int q1 = ((ql[l + 32] & 0x0F) | ((qh[l] >> 2) & 3) << 4) - 32;
        const int q2 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
        const int q3 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
        y[l] = d * static_cast<float>(sc[s]) * static_cast<float>(q0);
        y[l + 32] = d * static_cast<float>(sc[s + 2]) * static_cast<float>(q1);
        y[l + 64] = d * static_cast<float>(sc[s + 4]) * static_cast<float>(q2);
        y[l + 96] = d * static_cast<float>(sc[s + 6]) * static_cast<float>(q3);
      }
    }
  }
}

}  // namespace

void dequantize(GgmlType type, const uint8_t* src, float* dst, int64_t n) {
  const int64_t bv = ggml_block_values(type);
  if (bv == 0 || n <= 0) return;
  const int64_t nb = n / bv;
  switch (type) {
    case GgmlType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) dst[i] = Fp16ToFp32(LoadU16(src + 2 * i));
      return;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = Bf16ToFp32(LoadU16(src + 2 * i));
      return;
    case GgmlType::Q4_0: return DequantizeQ4_0(src, dst, nb);
    case GgmlType::Q4_1: return DequantizeQ4_1(src, dst, nb);
    case GgmlType::Q5_0: return DequantizeQ5_0(src, dst, nb);
    case GgmlType::Q8_0: return DequantizeQ8_0(src, dst, nb);
    case GgmlType::Q4_K: return DequantizeQ4K(src, dst, nb);
    case GgmlType::Q5_K: return DequantizeQ5K(src, dst, nb);
    case GgmlType::Q6_K: return DequantizeQ6K(src, dst, nb);
  }
}

}  // namespace troupe

// Register-tiling driver shared by the SIMD kernel files (internal).
//
// A kernel class K provides
//   using Acc = <vector type>;                 // fp32 accumulator
//   static constexpr int kMaxR, kMaxT;         // tile size: kMaxR in {1, 2, 4}, kMaxT <= 4
//   template <int R, int T>
//   static void Accumulate(const MatmulArgs&, int64_t r, int64_t t0, Acc (&acc)[R][T]);
//   static Acc Zero();
//   static float Sum(Acc);                     // horizontal sum
//   static void Sum4(Acc, Acc, Acc, Acc, float out[4]);  // Sum of each, bit for bit
// Accumulate adds W[r + i, :] . x[t0 + j, :] into acc[i][j]; it walks the
// rows once, so each weight block is decoded once per tile and reused for T
// activation rows from registers (prefill), and each activation block is
// loaded once for R weight rows.
//
// Batch invariance: an output y[t, r] is bit-identical whatever n, t's place
// in the batch, the rows a thread was given or the thread count. Every output
// is one accumulator (one FMA chain) that Accumulate updates by the same
// operations, in block order, whatever the tile: R and T only set how many
// chains are in flight. (Splitting a row over partial sums for the decode
// shape, as an earlier version did, made the rounding depend on the tile
// shape; decode instead relies on the out-of-order core overlapping the
// chains of consecutive rows, and on the chain being short: one FMA per
// group of blocks.) The horizontal sum is the same tree in Sum and Sum4.
// Kernels for different instruction sets still round differently: results
// are invariant per instruction set.
#pragma once

#include <cstdint>

#include "pipeline/quant/kernels.h"

namespace troupe {
namespace tiling {

// y[t0 + j, r + i] for i < R, j < T.
template <class K, int R, int T>
inline void Tile(const MatmulArgs& a, int64_t r, int64_t t0) {
  typename K::Acc acc[R][T];
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < T; ++j) acc[i][j] = K::Zero();
  }
  K::template Accumulate<R, T>(a, r, t0, acc);
  for (int j = 0; j < T; ++j) {
    float* y = a.y + (t0 + j) * a.ldy + r;
    if constexpr (R == 4) {
      K::Sum4(acc[0][j], acc[1][j], acc[2][j], acc[3][j], y);
    } else {
      for (int i = 0; i < R; ++i) y[i] = K::Sum(acc[i][j]);
    }
  }
}

// Activation rows [t, t + rest) for 0 < rest <= T.
template <class K, int R, int T>
inline void RestTile(const MatmulArgs& a, int64_t r, int64_t t, int64_t rest) {
  if constexpr (T > 0) {
    if (rest == T) return Tile<K, R, T>(a, r, t);
    RestTile<K, R, T - 1>(a, r, t, rest);
  }
}

// All activation rows for weight rows [r, r + R): full tiles, then the rest.
template <class K, int R>
inline void RowTile(const MatmulArgs& a, int64_t r) {
  constexpr int T = K::kMaxT;
  int64_t t = 0;
  for (; t + T <= a.n; t += T) Tile<K, R, T>(a, r, t);
  if (t < a.n) RestTile<K, R, T - 1>(a, r, t, a.n - t);
}

// Decode shape (T = n < kMaxT activation rows): weight rows one after the
// other, so the weights are read as one sequential stream, which the hardware
// prefetcher follows (interleaving 4 rows halved DRAM bandwidth); the
// out-of-order core overlaps the FMA chains of consecutive rows. The
// horizontal sums of four rows are done together.
template <class K, int T>
inline void DecodeRows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    typename K::Acc acc[4][T];
    for (int i = 0; i < 4; ++i) {
      typename K::Acc one[1][T];
      for (int j = 0; j < T; ++j) one[0][j] = K::Zero();
      K::template Accumulate<1, T>(a, r + i, 0, one);
      for (int j = 0; j < T; ++j) acc[i][j] = one[0][j];
    }
    for (int j = 0; j < T; ++j) {
      K::Sum4(acc[0][j], acc[1][j], acc[2][j], acc[3][j], a.y + j * a.ldy + r);
    }
  }
  for (; r < r1; ++r) Tile<K, 1, T>(a, r, 0);
}

template <class K>
void Rows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  if (a.n == 1) return DecodeRows<K, 1>(a, r0, r1);
  if constexpr (K::kMaxT > 2) {
    if (a.n == 2) return DecodeRows<K, 2>(a, r0, r1);
  }
  if constexpr (K::kMaxT > 3) {
    if (a.n == 3) return DecodeRows<K, 3>(a, r0, r1);
  }
  constexpr int R = K::kMaxR;
  int64_t r = r0;
  for (; r + R <= r1; r += R) RowTile<K, R>(a, r);
  for (; r < r1; ++r) RowTile<K, 1>(a, r);
}

}  // namespace tiling
}  // namespace troupe

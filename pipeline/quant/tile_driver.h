// Register-tiling driver shared by the SIMD kernel files (internal).
//
// A kernel class K provides
//   using Acc = <vector type>;                 // fp32 accumulator
//   static constexpr int kMaxR, kMaxT;         // tile size: kMaxR in {1, 2, 4}, kMaxT <= 4
//   template <int R, int T>
//   static void Accumulate(const MatmulArgs&, int64_t r, int64_t t0, Acc (&acc)[R][T]);
//   static Acc Zero(), Add(Acc, Acc);
//   static float Sum(Acc);                     // horizontal sum
//   static void Sum4(Acc, Acc, Acc, Acc, float out[4]);
// Accumulate adds W[r + i, :] . x[t0 + j, :] into acc[i][j]; it walks the
// whole row once, so each weight block is decoded once per tile and reused
// for T activation rows from registers (prefill). With one to three
// activation rows (decode) tiles are one weight row tall so the weights are
// read as one sequential stream, which the hardware prefetcher follows;
// ForGroups then splits the row over several partial accumulators so enough
// FMA chains are in flight.
#pragma once

#include <cstdint>

#include "pipeline/quant/kernels.h"

namespace troupe {
namespace tiling {

// Runs body(g, acc) for g in [0, groups). When the tile has fewer than 4
// accumulators, U = 4 / (R * T) consecutive groups go to U separate partial
// accumulator sets (summed at the end) to break the FMA dependency chain.
template <class K, int R, int T, class Body>
inline void ForGroups(int64_t groups, typename K::Acc (&acc)[R][T], const Body& body) {
  constexpr int U = R * T >= 4 ? 1 : 4 / (R * T);
  if constexpr (U == 1) {
    for (int64_t g = 0; g < groups; ++g) body(g, acc);
  } else {
    typename K::Acc part[U][R][T];
    for (int u = 0; u < U; ++u) {
      for (int i = 0; i < R; ++i) {
        for (int j = 0; j < T; ++j) part[u][i][j] = u == 0 ? acc[i][j] : K::Zero();
      }
    }
    int64_t g = 0;
    for (; g + U <= groups; g += U) {
      for (int u = 0; u < U; ++u) body(g + u, part[u]);
    }
    for (; g < groups; ++g) body(g, part[0]);
    for (int i = 0; i < R; ++i) {
      for (int j = 0; j < T; ++j) {
        for (int u = 1; u < U; ++u) part[0][i][j] = K::Add(part[0][i][j], part[u][i][j]);
        acc[i][j] = part[0][i][j];
      }
    }
  }
}

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

// Activation rows [t, t + rest) for rest < kMaxT.
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
  RestTile<K, R, T - 1>(a, r, t, a.n - t);
}

// Decode shape (T = n < 4 activation rows): four weight rows one after the
// other (a sequential read), their horizontal sums done together.
template <class K, int T>
inline void SequentialTile4(const MatmulArgs& a, int64_t r) {
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

template <class K>
void Rows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  int64_t r = r0;
  if (a.n < 4) {
    for (; r + 4 <= r1; r += 4) {
      switch (a.n) {
        case 1: SequentialTile4<K, 1>(a, r); break;
        case 2: SequentialTile4<K, 2>(a, r); break;
        default: SequentialTile4<K, 3>(a, r); break;
      }
    }
  } else if constexpr (K::kMaxR > 1) {
    for (; r + K::kMaxR <= r1; r += K::kMaxR) RowTile<K, K::kMaxR>(a, r);
  }
  for (; r < r1; ++r) RowTile<K, 1>(a, r);
}

}  // namespace tiling
}  // namespace troupe

// PrefetchAhead: the decode shape's software prefetch of weights (internal;
// x86 kernel files only).
//
// A decode matmul walks the weight rows one after the other, one sequential
// stream per thread, and spends only a few cycles on each 64-byte line. The
// hardware prefetcher alone then keeps too few lines in flight: on a Zen 4
// VM, Q4_1's decode stream ran at 15 GB/s on two threads, against 17.5-18
// with this (qmatmul_bench, three alternated runs; bench/README.md). The
// one-row kernels of Q4_1, Q5_0, Q8_0 and unrepacked Q4_0 call it once per
// pair of blocks; a prefetch never faults, so running past the matrix's end
// is harmless. The K-quant and repacked Q4_0 kernels do without: prefetching
// them measured no better.
#pragma once

#include <xmmintrin.h>

namespace troupe {

// How far ahead of the block being decoded: ~1.5-2 rows of a 576-wide Q4_1
// matrix. 512 to 4096 measured alike; 1024 was the best of them.
constexpr int kPrefetchBytes = 1024;

// Asks for the line kPrefetchBytes past `p` into every cache level.
inline void PrefetchAhead(const void* p) { _mm_prefetch(static_cast<const char*>(p) + kPrefetchBytes, _MM_HINT_T0); }

}  // namespace troupe

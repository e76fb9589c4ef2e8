// Counter-based randomness: one uniform number per (seed, step), no state.
//
// A session's draws must survive a replay that restarts at any step (see
// DESIGN.md "Failure"), so there is no generator object to carry along: the
// number used at step s is a pure function of (seed, s). The construction is
// SplitMix64 keyed by a hashed seed: UniformAt(seed, s) is element s of the
// SplitMix64 stream whose state starts at Mix64(seed). Different seeds give
// unrelated streams (their starting states differ by a hashed, effectively
// random 64-bit offset). Pure functions; thread-safe; never fail.
#pragma once

#include <cstdint>

namespace troupe {

// The SplitMix64 finalizer applied to x + golden gamma: a bijection on 64 bits
// with full avalanche.
inline uint64_t Mix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// 64 random bits for (seed, step).
inline uint64_t BitsAt(uint64_t seed, uint64_t step) { return Mix64(Mix64(seed) + step * 0x9E3779B97F4A7C15ull); }

// A double in [0, 1) with 53 random bits, for (seed, step).
inline double UniformAt(uint64_t seed, uint64_t step) {
  return static_cast<double>(BitsAt(seed, step) >> 11) * 0x1.0p-53;
}

}  // namespace troupe

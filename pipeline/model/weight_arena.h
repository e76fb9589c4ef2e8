// WeightArena: where a model part keeps the matrices it multiplies every
// token, copied off the file mapping into memory in 2 MB pages.
//
// A file mapping has 4 KB pages, so streaming a layer's weights (as every
// decode step does) costs a TLB miss and a page walk per 4 KB; in a VM each
// walk also goes through the host's tables. Copied into anonymous memory
// advised with MADV_HUGEPAGE (HugePageBuffer), the same weights take one TLB
// entry per 2 MB. Measured on a 2-vCPU AVX-512 VM: one session decoding
// SmolLM2 on 2 threads ran ~7 % faster in one process and ~4 % on a head +
// 3 shard ring (bench/README.md, "Weights in 2 MB pages").
//
// Place copies a view's bytes into the arena and hands the file's pages back
// (ReleasePages), so resident memory holds the weights once; the view's
// bytes stay readable (a later read faults them in from the page cache).
// The view must lie in a file mapping, as TensorView's bytes do: handing
// back pages of anonymous memory would discard what they hold. Place
// bump-allocates from chunks of at least kChunkBytes, reserved but untouched
// until written, so only the last 2 MB page of a chunk may be partly unused.
// Where the kernel grants no transparent huge pages ("never" in
// /sys/kernel/mm/transparent_hugepage/enabled) or memory cannot be mapped,
// Place returns the view unchanged and the mapping keeps serving it: the
// copy would gain nothing. It also stops copying (for good) before a chunk
// would leave less than RoomToCopy's headroom of memory available: the
// copy is anonymous memory the kernel cannot reclaim without swap, where
// the file's pages can be dropped and read again, so a node given more
// layers than its memory holds runs slowly from the mapping instead of
// being killed.
//
// For matrices read whole every step (a decoder's layers, the LM head), not
// for tables read a row at a time (the token embedding).
//
// Ownership: views returned by Place are valid while the arena lives;
// move-only. Thread-safety: Place is not reentrant (a loader's thread); the
// placed bytes may be read from any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "pipeline/quant/huge_pages.h"
#include "pipeline/tensor_view.h"

namespace troupe {

class WeightArena {
 public:
  static constexpr size_t kChunkBytes = size_t{64} << 20;
  static constexpr size_t kAlign = 64;                    // each placed tensor starts on a cache line
  static constexpr size_t kSliceBytes = size_t{8} << 20;  // copied, then its file pages handed back

  // `enabled` false: Place never copies (for a test of the fallback, or a
  // caller that knows better). By default, unless THP is "never"
  // (ThpSetting in huge_pages.h; unreadable: madvise then decides).
  WeightArena();
  explicit WeightArena(bool enabled) : enabled_(enabled) {}
  WeightArena(WeightArena&&) = default;
  WeightArena& operator=(WeightArena&&) = default;

  // The view of `view`'s copy in the arena, or `view` itself when the arena
  // does not copy (see above). Empty views are returned unchanged.
  TensorView Place(const TensorView& view);

  bool enabled() const { return enabled_; }
  size_t placed_bytes() const { return placed_; }  // bytes copied so far
  // Bytes of the arena the kernel holds in 2 MB pages (HugePageBuffer::
  // HugePageBytes over the chunks); -1 when that cannot be read. Slow (reads
  // /proc): for logs and tests.
  int64_t HugePageBytes() const;

 private:
  bool enabled_ = false;
  std::vector<HugePageBuffer> chunks_;
  size_t used_ = 0;  // bytes of chunks_.back() handed out
  size_t placed_ = 0;
};

// Whether copying `bytes` more leaves at least an eighth of the machine's
// memory, and 512 MiB, available (MemAvailable and MemTotal of
// /proc/meminfo, in bytes). Unknown figures (0) allow the copy.
bool RoomToCopy(uint64_t bytes, uint64_t available, uint64_t total);

// MemAvailable and MemTotal of /proc/meminfo in bytes; 0 for a figure that
// cannot be read.
struct MemoryNow {
  uint64_t available = 0;
  uint64_t total = 0;
};
MemoryNow ReadMemoryNow();

}  // namespace troupe

// HugePageBuffer: memory for weights backed by 2 MB pages where the kernel
// grants them, for a model loader that copies weights out of the file mapping.
//
// Decode reads every weight once per token; with 4 KB pages that is ~25,000
// TLB misses per token for a 100 MB model, and the page walks cost memory
// bandwidth (measured with qmatmul_bench --huge-pages: +30% decode bandwidth
// on the machines Troupe targets). File mappings get 4 KB pages, so a loader
// that wants this copies the weight bytes once at load time:
//
//   Result<HugePageBuffer> copy = HugePageBuffer::CopyOf(view.data, view.n_bytes);
//   if (!copy.ok()) ... keep using the file mapping (the copy is an optimization)
//   QuantMatrix::Create(view.type, rows, cols, copy->data(), copy->size());
//
// The buffer is an anonymous mapping, 2 MB aligned and rounded up to whole
// 2 MB pages, advised with madvise(MADV_HUGEPAGE) before it is first touched.
// Transparent huge pages are a request, not a guarantee: with THP "never", or
// when memory is too fragmented, some or all of the buffer stays in 4 KB
// pages (still correct, just not faster); HugePageBytes() reports what the
// kernel actually gave. Costs: the copy (~10 ms per 100 MB) and the memory
// (the copy is private, the file mapping could be shared between processes).
//
// Ownership: the buffer owns its mapping and unmaps it on destruction;
// move-only. Thread-safety: data() may be read from any number of threads; a
// HugePageBuffer itself must not be moved or destroyed while others use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "pipeline/status.h"

namespace troupe {

// The selected value of a transparent huge page setting under
// /sys/kernel/mm/transparent_hugepage/ ("enabled" reading "always [madvise]
// never" -> "madvise"), or "" when the kernel has no such file.
std::string ThpSetting(const std::string& name);

// Whether a madvised buffer gets 2 MB pages when touched: THP "enabled" is
// "always" or "madvise" and "defrag" compacts memory for a madvised fault
// ("always", "madvise" or "defer+madvise"). Otherwise madvise is only a wish.
bool ThpGrantsOnRequest();

class HugePageBuffer {
 public:
  static constexpr size_t kHugePage = size_t{2} << 20;

  HugePageBuffer() = default;
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  ~HugePageBuffer();

  // `n` zero bytes. Fails (kInvalidArgument) for n == 0 and (kIoError, with
  // the system's reason) when the mapping cannot be made. A refused madvise
  // is not an error: the buffer then has 4 KB pages.
  static Result<HugePageBuffer> Allocate(size_t n);
  // A copy of src[0, n). Fails like Allocate; src must not be null.
  static Result<HugePageBuffer> CopyOf(const void* src, size_t n);

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }  // n as requested
  // Whether madvise(MADV_HUGEPAGE) was accepted (the request was made).
  bool advised() const { return advised_; }
  // Bytes of the buffer currently in 2 MB pages (AnonHugePages of its
  // mapping in /proc/self/smaps); -1 when that cannot be read. Slow (reads
  // /proc): for logs and tests, not for hot paths.
  int64_t HugePageBytes() const;

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;  // bytes mapped at data_, a multiple of kHugePage
  bool advised_ = false;
};

}  // namespace troupe

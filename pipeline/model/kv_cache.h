// KvCache: the keys and values one session has produced in layers
// [begin_layer, end_layer) — a shard holds only its own layers.
//
// max_length, the positions it holds (the session's max_length), is fixed when
// the cache is created, and its memory is allocated then, so a node can
// account for it against its cache budget. Positions [0, length) are filled;
// a step appends `n` positions: Check(n) first, write keys/values at
// [length, length + n) in every layer, then Commit(n). The fp16 kernels'
// step calls ZeroAhead(n) before it writes or reads anything.
//
// Storage: one tensor of the shape's dtype on the shape's device, laid out
// per layer and keys/values either head-major, [layers, 2, n_kv_heads,
// max_length, head_dim] — the quantized kernels' fp16 host memory (half the
// memory of fp32, the precision llama.cpp keeps by default), read through
// keys()/values() — or position-major, [layers, 2, max_length, n_kv_heads,
// head_dim] — the torch backend's, read through storage(), where a step's
// new positions are one dense block per layer.
//
// Ownership: owned by exactly one session holder (a shard actor or the
// engine). Thread-safety: none; one step at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "pipeline/status.h"

namespace at {
class Tensor;
}  // namespace at

namespace troupe {

enum class KvDtype { kF16, kBF16, kF32 };
enum class KvLayout { kHeadMajor, kPositionMajor };

struct KvCacheShape {
  int64_t begin_layer = 0;
  int64_t end_layer = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  KvDtype dtype = KvDtype::kF16;  // kF16 head-major on "cpu": the kernels'
  std::string device = "cpu";     // "cpu" or "cuda:N"
  KvLayout layout = KvLayout::kHeadMajor;
  // Bytes a cache of `max_length` positions occupies.
  size_t BytesFor(int64_t max_length) const;
  // Whether keys()/values() may be used (fp16 in host memory).
  bool host_f16() const { return dtype == KvDtype::kF16 && device == "cpu" && layout == KvLayout::kHeadMajor; }
};

class KvCache {
 public:
  // InvalidArgument for an empty layer range or max_length <= 0;
  // ResourceExhausted when the memory cannot be allocated (a CUDA
  // out-of-memory included).
  static Result<std::unique_ptr<KvCache>> Create(const KvCacheShape& shape, int64_t max_length);
  ~KvCache();

  const KvCacheShape& shape() const { return shape_; }
  int64_t max_length() const { return max_length_; }
  int64_t length() const { return length_; }
  size_t bytes() const { return shape_.BytesFor(max_length_); }

  // ResourceExhausted naming both numbers when n more positions do not fit
  // (the session outgrew the positions it reserved).
  Status Check(int64_t n) const;
  void Commit(int64_t n) { length_ += n; }
  // Writes zeros into every row's positions past length and past the last
  // ones zeroed, up to length + n rounded up to kZeroAhead (at most
  // max_length); the session's positions are never touched. So a
  // step's reads past its end (the attention kernels take keys and values
  // 16 positions at a time) find zeros written by this process. A page
  // first read would map the kernel's shared zero page, and the write that
  // follows would then cost a copy-on-write fault and a TLB shootdown
  // across the process's CPUs (an IPI: a VM exit on a virtual machine).
  // host_f16() caches only; a no-op otherwise.
  static constexpr int64_t kZeroAhead = 64;
  void ZeroAhead(int64_t n);
  // Forgets positions from `length` on (used to replay a session).
  void Truncate(int64_t length) {
    if (length < length_) length_ = length;
  }

  // Makes this cache hold `source`'s positions [0, n) and nothing after
  // (prefix reuse: a new session starting from another's prompt).
  // InvalidArgument when the shapes differ, `source` holds fewer than n
  // positions or n does not fit this cache.
  Status CopyPrefix(const KvCache& source, int64_t n);
  // Makes this cache a copy of all of `source`'s positions (a beam taking
  // its parent's history): CopyPrefix(source, source.length()).
  Status CopyFrom(const KvCache& source) { return CopyPrefix(source, source.length()); }

  // [max_length, head_dim] fp16 rows of one global layer index and kv head.
  // Only for shape().host_f16() caches (nullptr otherwise).
  uint16_t* keys(int64_t layer, int64_t kv_head);
  uint16_t* values(int64_t layer, int64_t kv_head);
  const uint16_t* keys(int64_t layer, int64_t kv_head) const {
    return const_cast<KvCache*>(this)->keys(layer, kv_head);
  }
  const uint16_t* values(int64_t layer, int64_t kv_head) const {
    return const_cast<KvCache*>(this)->values(layer, kv_head);
  }

  // The whole storage tensor (see above); callers include ATen themselves.
  const at::Tensor& storage() const { return *storage_; }

 private:
  KvCache();
  KvCacheShape shape_;
  int64_t max_length_ = 0;
  int64_t length_ = 0;
  int64_t zeroed_ = 0;  // positions [0, zeroed_) of every row were written (ZeroAhead)
  std::unique_ptr<at::Tensor> storage_;
  uint16_t* host_ = nullptr;  // storage_'s data when host_f16()
};

}  // namespace troupe

#include "pipeline/model/kv_cache.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "pipeline/model/torch_device.h"

namespace troupe {

namespace {

size_t ElementBytes(KvDtype d) { return d == KvDtype::kF32 ? 4 : 2; }

at::ScalarType ScalarTypeOf(KvDtype d) {
  switch (d) {
    case KvDtype::kF16: return at::kHalf;
    case KvDtype::kBF16: return at::kBFloat16;
    case KvDtype::kF32: return at::kFloat;
  }
  return at::kHalf;
}

}  // namespace

size_t KvCacheShape::BytesFor(int64_t max_length) const {
  return static_cast<size_t>(end_layer - begin_layer) * 2 * n_kv_heads * max_length * head_dim * ElementBytes(dtype);
}

KvCache::KvCache() : storage_(std::make_unique<at::Tensor>()) {}
KvCache::~KvCache() = default;

Result<std::unique_ptr<KvCache>> KvCache::Create(const KvCacheShape& shape, int64_t max_length) {
  if (shape.end_layer <= shape.begin_layer || shape.begin_layer < 0)
    return Status::InvalidArgument("KV cache needs a non-empty layer range, got [" + std::to_string(shape.begin_layer) +
                                   ", " + std::to_string(shape.end_layer) + ")");
  if (max_length <= 0) return Status::InvalidArgument("KV cache max_length must be positive");
  if (shape.n_kv_heads <= 0 || shape.head_dim <= 0) return Status::InvalidArgument("KV cache needs heads and head_dim");
  TROUPE_ASSIGN_OR_RETURN(std::string device, NormalizeDevice(shape.device));
  std::unique_ptr<KvCache> c(new KvCache());
  c->shape_ = shape;
  c->shape_.device = device;
  c->max_length_ = max_length;
  try {
    const int64_t layers = shape.end_layer - shape.begin_layer;
    const auto options = at::TensorOptions().dtype(ScalarTypeOf(shape.dtype)).device(device);
    *c->storage_ = shape.layout == KvLayout::kHeadMajor
                       ? at::empty({layers, 2, shape.n_kv_heads, max_length, shape.head_dim}, options)
                       : at::empty({layers, 2, max_length, shape.n_kv_heads, shape.head_dim}, options);
  } catch (const std::exception& e) {
    return Status::ResourceExhausted("cannot allocate a KV cache of " + std::to_string(shape.BytesFor(max_length)) +
                                     " bytes on " + device + ": " + std::string(e.what()).substr(0, 200));
  }
  if (c->shape_.host_f16()) c->host_ = reinterpret_cast<uint16_t*>(c->storage_->data_ptr());
  return c;
}

Status KvCache::Check(int64_t n) const {
  if (n < 0 || length_ + n > max_length_)
    return Status::ResourceExhausted("the session needs " + std::to_string(length_ + n) +
                                     " positions but its KV cache holds " + std::to_string(max_length_));
  return Status::Ok();
}

Status KvCache::CopyPrefix(const KvCache& source, int64_t n) {
  const KvCacheShape& o = source.shape_;
  if (o.begin_layer != shape_.begin_layer || o.end_layer != shape_.end_layer || o.n_kv_heads != shape_.n_kv_heads ||
      o.head_dim != shape_.head_dim || o.dtype != shape_.dtype || o.device != shape_.device ||
      o.layout != shape_.layout) {
    return Status::InvalidArgument("KV cache copy between different shapes");
  }
  if (n < 0 || n > source.length_ || n > max_length_) {
    return Status::InvalidArgument("KV cache copy of " + std::to_string(n) + " positions from a cache holding " +
                                   std::to_string(source.length_) + " into one of " + std::to_string(max_length_));
  }
  if (&source != this && n > 0) {
    if (host_ != nullptr) {
      const size_t bytes = static_cast<size_t>(n * shape_.head_dim) * sizeof(uint16_t);
      for (int64_t layer = shape_.begin_layer; layer < shape_.end_layer; ++layer) {
        for (int64_t h = 0; h < shape_.n_kv_heads; ++h) {
          std::memcpy(keys(layer, h), source.keys(layer, h), bytes);
          std::memcpy(values(layer, h), source.values(layer, h), bytes);
        }
      }
    } else {
      try {
        const int64_t positions = shape_.layout == KvLayout::kHeadMajor ? 3 : 2;
        storage_->narrow(positions, 0, n).copy_(source.storage_->narrow(positions, 0, n));
      } catch (const std::exception& e) {
        return Status::Internal(std::string("KV cache copy: ") + e.what());
      }
    }
  }
  length_ = n;
  return Status::Ok();
}

void KvCache::ZeroAhead(int64_t n) {
  if (host_ == nullptr) return;
  const int64_t want = std::min(max_length_, (length_ + n + kZeroAhead - 1) / kZeroAhead * kZeroAhead);
  const int64_t from = std::max(zeroed_, length_);  // [0, length) holds the session's positions
  if (want <= from) return;
  const size_t bytes = static_cast<size_t>((want - from) * shape_.head_dim) * sizeof(uint16_t);
  for (int64_t layer = shape_.begin_layer; layer < shape_.end_layer; ++layer) {
    for (int64_t h = 0; h < shape_.n_kv_heads; ++h) {
      std::memset(keys(layer, h) + from * shape_.head_dim, 0, bytes);
      std::memset(values(layer, h) + from * shape_.head_dim, 0, bytes);
    }
  }
  zeroed_ = want;
}

uint16_t* KvCache::keys(int64_t layer, int64_t kv_head) {
  if (host_ == nullptr) return nullptr;
  const int64_t l = layer - shape_.begin_layer;
  return host_ + ((l * 2 + 0) * shape_.n_kv_heads + kv_head) * max_length_ * shape_.head_dim;
}

uint16_t* KvCache::values(int64_t layer, int64_t kv_head) {
  if (host_ == nullptr) return nullptr;
  const int64_t l = layer - shape_.begin_layer;
  return host_ + ((l * 2 + 1) * shape_.n_kv_heads + kv_head) * max_length_ * shape_.head_dim;
}

}  // namespace troupe

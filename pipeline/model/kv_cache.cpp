#include "pipeline/model/kv_cache.h"

#include <cstring>
#include <new>
#include <string>

namespace troupe {

size_t KvCacheShape::BytesFor(int64_t max_length) const {
  return static_cast<size_t>(end_layer - begin_layer) * 2 * n_kv_heads * max_length * head_dim * sizeof(uint16_t);
}

Result<std::unique_ptr<KvCache>> KvCache::Create(const KvCacheShape& shape, int64_t max_length) {
  if (shape.end_layer <= shape.begin_layer || shape.begin_layer < 0)
    return Status::InvalidArgument("KV cache needs a non-empty layer range, got [" + std::to_string(shape.begin_layer) +
                                   ", " + std::to_string(shape.end_layer) + ")");
  if (max_length <= 0) return Status::InvalidArgument("KV cache max_length must be positive");
  if (shape.n_kv_heads <= 0 || shape.head_dim <= 0) return Status::InvalidArgument("KV cache needs heads and head_dim");
  std::unique_ptr<KvCache> c(new KvCache());
  c->shape_ = shape;
  c->max_length_ = max_length;
  const size_t n = shape.BytesFor(max_length) / sizeof(uint16_t);
  c->data_.reset(new (std::nothrow) uint16_t[n]);
  if (!c->data_) return Status::ResourceExhausted("cannot allocate a KV cache of " + std::to_string(n * 2) + " bytes");
  return c;
}

KvCache::~KvCache() = default;

Status KvCache::Check(int64_t n) const {
  if (n < 0 || length_ + n > max_length_)
    return Status::ResourceExhausted("the session needs " + std::to_string(length_ + n) +
                                     " positions but its KV cache holds " + std::to_string(max_length_));
  return Status::Ok();
}

Status KvCache::CopyFrom(const KvCache& source) {
  const KvCacheShape& o = source.shape_;
  if (o.begin_layer != shape_.begin_layer || o.end_layer != shape_.end_layer || o.n_kv_heads != shape_.n_kv_heads ||
      o.head_dim != shape_.head_dim) {
    return Status::InvalidArgument("KV cache copy between different shapes");
  }
  if (source.length_ > max_length_) {
    return Status::InvalidArgument("KV cache copy of " + std::to_string(source.length_) +
                                   " positions into a cache of " + std::to_string(max_length_));
  }
  if (&source == this) return Status::Ok();
  const size_t bytes = static_cast<size_t>(source.length_ * shape_.head_dim) * sizeof(uint16_t);
  for (int64_t layer = shape_.begin_layer; layer < shape_.end_layer; ++layer) {
    for (int64_t h = 0; h < shape_.n_kv_heads; ++h) {
      std::memcpy(keys(layer, h), source.keys(layer, h), bytes);
      std::memcpy(values(layer, h), source.values(layer, h), bytes);
    }
  }
  length_ = source.length_;
  return Status::Ok();
}

uint16_t* KvCache::keys(int64_t layer, int64_t kv_head) {
  const int64_t l = layer - shape_.begin_layer;
  return data_.get() + ((l * 2 + 0) * shape_.n_kv_heads + kv_head) * max_length_ * shape_.head_dim;
}

uint16_t* KvCache::values(int64_t layer, int64_t kv_head) {
  const int64_t l = layer - shape_.begin_layer;
  return data_.get() + ((l * 2 + 1) * shape_.n_kv_heads + kv_head) * max_length_ * shape_.head_dim;
}

}  // namespace troupe

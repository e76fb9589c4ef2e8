#include "pipeline/model/output_buffers.h"

#include <ATen/ops/empty.h>

namespace troupe {

at::Tensor OutputBuffers::Take(int64_t rows) {
  if (rows > max_pooled_rows_) return at::empty({rows, cols_}, at::kFloat);
  std::lock_guard<std::mutex> lock(mu_);
  for (const at::Tensor& b : buffers_) {
    // Only the pool's own handle on the storage: every view handed out is gone.
    if (b.size(0) >= rows && b.storage().use_count() == 1) return b.narrow(0, 0, rows);
  }
  int64_t pooled_rows = 1;
  while (pooled_rows < rows) pooled_rows *= 2;
  at::Tensor b = at::empty({pooled_rows, cols_}, at::kFloat);
  if (buffers_.size() < max_buffers_) {
    buffers_.push_back(b);
  } else {  // a free buffer too small for `rows` makes room (when every one is busy, none is pooled)
    for (at::Tensor& old : buffers_) {
      if (old.storage().use_count() == 1) {
        old = b;
        break;
      }
    }
  }
  return b.narrow(0, 0, rows);
}

size_t OutputBuffers::pooled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return buffers_.size();
}

}  // namespace troupe

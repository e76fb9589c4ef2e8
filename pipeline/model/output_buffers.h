// OutputBuffers: fp32 CPU tensors [rows, cols] for a stage's outputs (the LM
// head's logits), handed out again once nothing refers to them any more.
//
// A fresh allocation of a few MB is mmapped by malloc, and the kernel faults
// in and zeroes every page on the first write: a 16-session ring spent 2-4 %
// of its time there (the LM head's logits, [batch rows, vocab] f32, a new
// allocation per batch). Take() returns a view of the first pooled buffer
// that no tensor refers to (every slice of it dropped: the sampler is done
// with its rows) and is large enough, else pools a new one of a power-of-two
// row count; at most `max_buffers` are pooled, and requests of more than
// `max_pooled_rows` rows (a prompt's every-row logits) are plain allocations.
//
// Thread-safety: Take from any thread.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <mutex>
#include <vector>

namespace troupe {

class OutputBuffers {
 public:
  explicit OutputBuffers(int64_t cols, int64_t max_pooled_rows = 64, size_t max_buffers = 4)
      : cols_(cols), max_pooled_rows_(max_pooled_rows), max_buffers_(max_buffers) {}

  // An uninitialised [rows, cols] fp32 CPU tensor no one else refers to.
  at::Tensor Take(int64_t rows);

  size_t pooled() const;

 private:
  const int64_t cols_, max_pooled_rows_;
  const size_t max_buffers_;
  mutable std::mutex mu_;
  std::vector<at::Tensor> buffers_;
};

}  // namespace troupe

// The Multiply driver: picks kernels, quantizes the activations once, and
// splits weight rows over threads.
//
// Weight rows (across the matrices of a shared-input call, in order) are cut
// into 2 contiguous runs per thread, sized by weight bytes, so each run is
// streamed front to back. Runs go through ThreadPool (thread_pool.h) rather
// than an OpenMP parallel region: on a crowded machine a libgomp barrier
// waits for a preempted worker (measured here: a 2-thread decode sweep took
// 1.5 s/token with OpenMP vs 6 ms with the pool), while the pool lets the
// caller take the runs no worker has started. omp_get_max_threads() (that
// is, OMP_NUM_THREADS or the core count) is still the default thread count.

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>

#include "pipeline/quant/activations.h"
#include "pipeline/quant/kernels.h"
#include "pipeline/quant/thread_pool.h"

namespace troupe {
namespace {

// Thread boundaries fall on multiples of this many rows within a matrix: the
// kernels tile rows by 4 and 16 fp32 outputs fill one cache line.
constexpr int64_t kRowAlign = 16;
// Below this many multiply-adds a second thread costs more than it saves.
constexpr int64_t kMinParallelMacs = 1 << 16;
// Activation rows are quantized inside the parallel region from this many on.
constexpr int64_t kMinParallelQuantRows = 4;
constexpr int kMaxOutputs = 16;
// Contiguous row runs per thread. The pool hands runs to whichever thread is
// free, so a thread that starts late (a worker's wake-up), runs slower (a
// vCPU whose core is shared) or is preempted leaves at most one small run for
// the others to wait on at the end. On the 2-vCPU VM of bench/README.md, 8
// runs a thread rather than 2 decoded 13 % faster in one process (medians of
// 10 alternated runs, 9 of 10 pairs faster) and prefilled ~500 tokens ~6 %
// faster; 32 was slower again (runs of a few rows). Outputs are the same
// bits: each row's dot products do not depend on where a run starts.
constexpr int kPartsPerThread = 8;

// 64-byte aligned scratch owned by the calling thread, grown on demand.
uint8_t* ThreadScratch(size_t bytes) {
  struct Deleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<uint8_t, Deleter> buf;
  thread_local size_t cap = 0;
  if (bytes > cap) {
    const size_t want = (std::max(bytes, cap * 2) + 63) / 64 * 64;
    buf.reset(static_cast<uint8_t*>(std::aligned_alloc(64, want)));
    cap = buf ? want : 0;
  }
  return buf.get();
}

struct Job {
  RowsKernel kernel = nullptr;
  MatmulArgs args;
  int64_t rows = 0;
  int64_t first_byte = 0;  // offset of row 0 in the concatenation of all jobs
};

// A position in the concatenated rows of all jobs.
struct RowPos {
  int job;
  int64_t row;
};

// Where thread `part` of `parts` starts: the row holding byte total*part/parts,
// rounded to kRowAlign within its job.
RowPos SplitPoint(const Job* jobs, int count, int64_t total_bytes, int part, int parts) {
  if (part >= parts) return {count - 1, jobs[count - 1].rows};
  const int64_t target = total_bytes / parts * part + total_bytes % parts * part / parts;
  int j = 0;
  while (j + 1 < count && jobs[j + 1].first_byte <= target) ++j;
  const int64_t row = (target - jobs[j].first_byte) / jobs[j].args.row_bytes;
  const int64_t aligned = (row + kRowAlign / 2) / kRowAlign * kRowAlign;
  return {j, std::min(aligned, jobs[j].rows)};
}

void RunRange(const Job* jobs, RowPos from, RowPos to) {
  for (int j = from.job; j <= to.job; ++j) {
    const int64_t r0 = j == from.job ? from.row : 0;
    const int64_t r1 = j == to.job ? to.row : jobs[j].rows;
    if (r0 < r1) jobs[j].kernel(jobs[j].args, r0, r1);
  }
}

}  // namespace

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "unknown";
}

bool IsaAvailable(Isa isa) { return GetRowsKernel(GgmlType::F32, isa) != nullptr; }

Isa BestIsa() {
  static const Isa best = IsaAvailable(Isa::kAvx512) ? Isa::kAvx512
                          : IsaAvailable(Isa::kAvx2) ? Isa::kAvx2
                                                     : Isa::kScalar;
  return best;
}

RowsKernel GetRowsKernel(GgmlType type, Isa isa) {
  switch (isa) {
    case Isa::kScalar: return GetScalarKernel(type);
    case Isa::kAvx2: return GetAvx2Kernel(type);
    case Isa::kAvx512: return GetAvx512Kernel(type);
  }
  return nullptr;
}

void MultiplyWithIsa(const QuantMatrix& w, Isa isa, const float* x, int64_t n, float* y, int threads) {
  const MatmulOutput out{&w, y};
  MultiplySharedWithIsa(isa, &out, 1, x, n, threads);
}

void MultiplySharedWithIsa(Isa isa, const MatmulOutput* outputs, int count, const float* x, int64_t n, int threads) {
  if (n <= 0 || count <= 0) return;
  if (count > kMaxOutputs) {  // rare: split into several calls
    MultiplySharedWithIsa(isa, outputs, kMaxOutputs, x, n, threads);
    MultiplySharedWithIsa(isa, outputs + kMaxOutputs, count - kMaxOutputs, x, n, threads);
    return;
  }
  const int64_t cols = outputs[0].w->cols();
  for (int i = 1; i < count; ++i) {
    if (outputs[i].w->cols() != cols) {  // not a shared input after all: one call each
      for (int k = 0; k < count; ++k) MultiplySharedWithIsa(isa, outputs + k, 1, x, n, threads);
      return;
    }
  }

  // One quantized copy of x per activation layout in use.
  constexpr int kLayouts = kActLayouts;
  int64_t stride[kLayouts] = {}, offset[kLayouts] = {};
  for (int i = 0; i < count; ++i) {
    const int l = static_cast<int>(ActLayoutFor(outputs[i].w->type()));
    stride[l] = ActRowBytes(static_cast<ActLayout>(l), cols);
  }
  int64_t scratch_bytes = 0;
  for (int l = 0; l < kLayouts; ++l) {
    offset[l] = scratch_bytes;
    scratch_bytes += n * stride[l];
  }
  constexpr int kQ8x2 = static_cast<int>(ActLayout::kQ8x2);
  // Row lanes for the lane kernels and row pairs for the pair kernels, when
  // one of the matrices takes them.
  const bool lane_rows = isa == Isa::kAvx512 && n >= kMinLaneRows && n <= kLaneRows && stride[kQ8x2] > 0;
  auto lane_kernel = [&](GgmlType type) { return lane_rows ? GetAvx512LaneKernel(type) : nullptr; };
  bool lanes = false, pairs = false;
  if (isa == Isa::kAvx512 && n >= kMinPairRows && stride[kQ8x2] > 0) {
    for (int i = 0; i < count; ++i) {
      const GgmlType type = outputs[i].w->type();
      lanes = lanes || lane_kernel(type) != nullptr;
      pairs = pairs || (lane_kernel(type) == nullptr && GetAvx512PairKernel(type) != nullptr);
    }
  }
  const int64_t pairs_offset = (scratch_bytes + 63) / 64 * 64;
  if (pairs) scratch_bytes = pairs_offset + ActPairsBytes(n, cols);
  const int64_t lanes_offset = (scratch_bytes + 63) / 64 * 64;
  if (lanes) scratch_bytes = lanes_offset + ActLanesBytes(cols);
  uint8_t* xq = scratch_bytes > 0 ? ThreadScratch(static_cast<size_t>(scratch_bytes)) : nullptr;

  static std::atomic<uint64_t> next_x_id{1};
  const uint64_t x_id = next_x_id.fetch_add(1, std::memory_order_relaxed);
  Job jobs[kMaxOutputs];
  int64_t total_bytes = 0, total_macs = 0;
  for (int i = 0; i < count; ++i) {
    const QuantMatrix& w = *outputs[i].w;
    Job& job = jobs[i];
    job.kernel = GetRowsKernel(w.type(), isa);
    if (job.kernel == nullptr) job.kernel = GetScalarKernel(w.type());
    const int l = static_cast<int>(ActLayoutFor(w.type()));
    if (lanes && lane_kernel(w.type()) != nullptr) {
      job.kernel = lane_kernel(w.type());
      job.args.xl = xq + lanes_offset;
    } else if (pairs && GetAvx512PairKernel(w.type()) != nullptr) {
      job.kernel = GetAvx512PairKernel(w.type());
      job.args.xp = xq + pairs_offset;
    }
    job.args.w = w.data();
    job.args.row_bytes = w.row_bytes();
    job.args.cols = cols;
    job.args.xq = stride[l] > 0 ? xq + offset[l] : nullptr;
    job.args.xq_stride = stride[l];
    job.args.x = x;
    job.args.n = n;
    job.args.y = outputs[i].y;
    job.args.ldy = w.rows();
    job.args.repacked = GgmlRepacks(w.type(), w.rows());
    job.args.x_id = x_id;
    job.rows = w.rows();
    job.first_byte = total_bytes;
    total_bytes += w.rows() * w.row_bytes();
    total_macs += w.rows() * cols * n;
  }

  int used[kLayouts], n_used = 0;
  for (int l = 0; l < kLayouts; ++l) {
    if (stride[l] > 0) used[n_used++] = l;
  }
  int nt = threads > 0 ? threads : omp_get_max_threads();
  if (total_macs < kMinParallelMacs) nt = 1;
  const bool quantize_in_region = nt > 1 && n >= kMinParallelQuantRows;
  const int64_t quant_rows = n_used * n;
  auto quantize = [&](int64_t k) {  // k enumerates (layout in use, activation row)
    const int l = used[k / n];
    const int64_t t = k % n;
    QuantizeActRow(static_cast<ActLayout>(l), x + t * cols, cols, xq + offset[l] + t * stride[l]);
  };
  auto build_pairs = [&] {
    if (pairs) BuildActPairs(xq + offset[kQ8x2], stride[kQ8x2], n, cols, xq + pairs_offset);
    if (lanes) BuildActLanes(xq + offset[kQ8x2], stride[kQ8x2], n, cols, xq + lanes_offset);
  };
  if (!quantize_in_region) {
    for (int64_t k = 0; k < quant_rows; ++k) quantize(k);
    build_pairs();
  }
  if (nt == 1) {
    RunRange(jobs, {0, 0}, {count - 1, jobs[count - 1].rows});
    return;
  }
  ThreadPool& pool = ThreadPool::Global();
  if (quantize_in_region) {
    pool.Run(nt, [&](int part) {
      for (int64_t k = quant_rows * part / nt; k < quant_rows * (part + 1) / nt; ++k) quantize(k);
    });
    build_pairs();
  }
  const int parts = nt * kPartsPerThread;
  pool.Run(
      parts,
      [&](int part) {
        RunRange(jobs, SplitPoint(jobs, count, total_bytes, part, parts),
                 SplitPoint(jobs, count, total_bytes, part + 1, parts));
      },
      nt);
}

}  // namespace troupe

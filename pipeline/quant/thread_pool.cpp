#include "pipeline/quant/thread_pool.h"

#include <sched.h>

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TROUPE_CPU_RELAX() _mm_pause()
#else
#define TROUPE_CPU_RELAX() ((void)0)
#endif

#include "pipeline/thread_name.h"

namespace troupe {
namespace {

// Polling before a thread goes to sleep: 4096 polls, ~180 us on the 2-vCPU
// AVX2 VM of bench/results/avx2 (a pause costs ~100 cycles there; the time
// follows the CPU's pause latency). Every 64 polls it yields, so a crowded
// core goes to whoever needs it. Waking a sleeping worker costs 0.1-0.3 ms on
// that VM, more than the gaps between a step's kernels, so a short spin loses
// the helper for the next kernel. With one worker per 2-thread process (Run's
// `threads`), 4096 polls against 1024: a single process decoded 80.5 vs 74.5
// tok/s (10 alternated runs), one session through head + 3 shards 61.2 vs 59.7
// and 55.3 vs 54.7 (8 each), 16 sessions 212/231 vs 218/224. Nodes call Park()
// between steps, so the spin never outlasts a step. (With three workers per
// process the longer spin took cores from the other nodes: 16 sessions ran
// 10 % slower, 472 vs 518 tok/s.)
constexpr int kSpinPolls = 4096;

template <class Pred>
bool SpinUntil(const Pred& ready) {
  for (int i = 0; i < kSpinPolls; ++i) {
    if (ready()) return true;
    if ((i & 63) == 63) {
      sched_yield();
    } else {
      TROUPE_CPU_RELAX();
    }
  }
  return ready();
}

}  // namespace

ThreadPool& ThreadPool::Global() {
  static ThreadPool* pool = new ThreadPool();  // never destroyed: workers may outlive static teardown
  return *pool;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::EnsureWorkers(int n) {
  while (static_cast<int>(workers_.size()) < n) workers_.emplace_back([this] { WorkerLoop(); });
}

void ThreadPool::Work(Job& job) {
  for (int p = job.next.fetch_add(1); p < job.parts; p = job.next.fetch_add(1)) {
    (*job.fn)(p);
    if (job.done.fetch_add(1, std::memory_order_acq_rel) + 1 == job.parts) {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_.notify_all();
    }
  }
}

void ThreadPool::WorkerLoop() {
  NameThisThread("troupe-pool");
  uint64_t seen = 0;
  while (true) {
    const bool work = SpinUntil(
        [&] { return generation_.load(std::memory_order_acquire) != seen || parked_.load(std::memory_order_relaxed); });
    if (!work || generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleeping_.fetch_add(1);
      wake_.wait(lock, [&] { return stop_ || generation_.load() != seen; });
      sleeping_.fetch_sub(1);
    }
    std::shared_ptr<Job> job;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stop_) return;
      seen = generation_.load();
      job = job_;
    }
    // Workers beyond the caller's thread count stay out of this job.
    if (job && job->joined.fetch_add(1) < job->helpers) Work(*job);
  }
}

void ThreadPool::Run(int parts, const std::function<void(int part)>& fn, int threads) {
  const int helpers = std::min(parts, threads > 0 ? threads : parts) - 1;
  if (parts <= 0) return;
  if (helpers <= 0) {
    for (int p = 0; p < parts; ++p) fn(p);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  parked_.store(false, std::memory_order_relaxed);
  EnsureWorkers(helpers);
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->parts = parts;
  job->helpers = helpers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = job;
    generation_.fetch_add(1, std::memory_order_release);
  }
  if (sleeping_.load() > 0) {
    if (helpers == 1) {
      wake_.notify_one();
    } else {
      wake_.notify_all();
    }
  }
  Work(*job);
  if (!SpinUntil([&] { return job->done.load(std::memory_order_acquire) == parts; })) {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return job->done.load() == parts; });
  }
}

void ThreadPool::Park() { parked_.store(true, std::memory_order_relaxed); }

void ThreadPool::Prewake() {
  parked_.store(false, std::memory_order_relaxed);
  if (sleeping_.load() == 0) return;
  {
    // A new generation with the same job_: a woken worker finds that job
    // finished (or, during a Run, joins it as usual: `helpers` still
    // bounds who works) and spins for the next one.
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
}

}  // namespace troupe

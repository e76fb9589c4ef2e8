// ThreadPool: the worker threads that split one matrix product (or one
// attention pass) across cores.
//
// Why not OpenMP: libgomp's workers spin hard at barriers, and when the
// machine is oversubscribed (several shard processes on one host, a CAF
// scheduler, a second engine) a 2-thread region then runs orders of magnitude
// slower (measured here: 1.8 vs 138 tokens/s). These workers spin briefly
// (up to ~0.2 ms, yielding the core while they do; thread_pool.cpp says why),
// then sleep on a condition variable, so back-to-back kernels stay hot and an
// idle or crowded process does not burn cores.
//
// Run(parts, fn, threads) calls fn(part) for every part in [0, parts) on up
// to `threads` threads (the caller included; 0 means `parts`), and returns
// when all are done. Parts go to whichever taking-part thread is free, so
// parts > threads evens out a thread the OS preempts, without starting more
// threads than the caller asked for: an extra worker would only wake, find
// nothing left, and spin beside the others (on two cores, three workers for a
// 2-thread product took the core from the caller every ~100 us). Which thread
// runs which part is unspecified; a part must not depend on that (results are
// the same for any thread count). Calls from different threads are serialized.
// Thread-safety: Run may be called from any thread; fn must be reentrant.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace troupe {

class ThreadPool {
 public:
  // The process-wide pool. Workers are started on first use, as many as the
  // largest number of threads asked for minus one (the caller works too).
  static ThreadPool& Global();

  ThreadPool() = default;
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Run(int parts, const std::function<void(int part)>& fn, int threads = 0);

  // Sends idle workers to sleep now instead of after their spin: for a
  // caller that knows no Run follows soon (a node process between steps:
  // the spin would only take a core from the next stage of the ring, on
  // the same host, and from the threads that carry the step on). The next
  // Run wakes them as usual.
  void Park();

  // Wakes sleeping workers now, for a caller that knows a Run comes soon
  // (a node whose step has just arrived, while its actor's worker wakes and
  // reads the step): they spin as after a Run, so the first product of the
  // step finds them awake instead of waking them itself. Cancels a Park.
  // Cheap when no worker sleeps; a worker that no Run finds within its spin
  // goes back to sleep.
  void Prewake();

 private:
  // One Run's work. Workers keep a reference; a finished job has every part
  // claimed, so a late worker never calls its (by then dangling) fn.
  struct Job {
    const std::function<void(int)>* fn = nullptr;
    int parts = 0;
    int helpers = 0;             // workers that may take part
    std::atomic<int> joined{0};  // workers that tried to
    std::atomic<int> next{0};
    std::atomic<int> done{0};
  };

  void EnsureWorkers(int n);  // requires run_mutex_
  void WorkerLoop();
  void Work(Job& job);

  std::mutex run_mutex_;  // one Run at a time
  std::vector<std::thread> workers_;

  std::mutex mutex_;  // guards job_, stop_ and the condition variables
  std::condition_variable wake_;
  std::condition_variable finished_;
  bool stop_ = false;
  std::shared_ptr<Job> job_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> sleeping_{0};
  std::atomic<bool> parked_{false};
};

}  // namespace troupe

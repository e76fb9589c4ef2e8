// ThreadPool: every part runs exactly once, for any part count, from many
// successive and concurrent callers, with Park and Prewake in between; its
// threads are named.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "pipeline/quant/thread_pool.h"
#include "pipeline/thread_name.h"

namespace troupe {
namespace {

TEST(ThreadPool, EveryPartRunsExactlyOnce) {
  ThreadPool pool;
  for (int parts : {1, 2, 3, 7, 16}) {
    for (int round = 0; round < 200; ++round) {
      std::vector<std::atomic<int>> hits(parts);
      pool.Run(parts, [&](int p) { hits[p].fetch_add(1); });
      for (int p = 0; p < parts; ++p) ASSERT_EQ(hits[p].load(), 1) << "parts " << parts << " part " << p;
    }
  }
}

TEST(ThreadPool, ConcurrentCallersAreSerializedCorrectly) {
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int i = 0; i < 300; ++i) ThreadPool::Global().Run(3, [&](int p) { total.fetch_add(p + 1); });
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 300 * (1 + 2 + 3));
}

TEST(ThreadPool, WorkersWakeAfterSleeping) {
  ThreadPool pool;
  std::atomic<int> n{0};
  pool.Run(2, [&](int) { n.fetch_add(1); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // workers are asleep by now
  pool.Run(2, [&](int) { n.fetch_add(1); });
  EXPECT_EQ(n.load(), 4);
}

// Park sends spinning workers to sleep; the next Run must still wake them
// and run every part, whether it comes at once or after they slept, and a
// Park between Runs from several threads must not lose a wake-up.
TEST(ThreadPool, RunsEveryPartAfterPark) {
  ThreadPool pool;
  for (int round = 0; round < 200; ++round) {
    std::atomic<int> sum{0};
    pool.Run(4, [&](int part) { sum += part + 1; });
    EXPECT_EQ(sum.load(), 10) << "round " << round;
    pool.Park();
    if (round % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::vector<std::thread> callers;
  std::atomic<int> total{0};
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        pool.Run(3, [&](int) { total++; });
        pool.Park();
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 3 * 100 * 3);
}

// More parts than threads even out a preempted thread, but only `threads`
// threads (the caller included) take part, also once the pool holds more
// workers for an earlier, wider caller.
TEST(ThreadPool, PartsBeyondThreadsRunOnAtMostThatManyThreads) {
  ThreadPool pool;
  auto threads_used = [&](int parts, int threads) {
    std::mutex mu;
    std::set<std::thread::id> ids;
    std::vector<std::atomic<int>> hits(parts);
    pool.Run(
        parts,
        [&](int p) {
          hits[p].fetch_add(1);
          std::this_thread::sleep_for(std::chrono::microseconds(200));  // long enough for every worker to try
          std::lock_guard<std::mutex> lock(mu);
          ids.insert(std::this_thread::get_id());
        },
        threads);
    for (int p = 0; p < parts; ++p) EXPECT_EQ(hits[p].load(), 1) << "part " << p;
    return ids.size();
  };
  for (int round = 0; round < 20; ++round) EXPECT_LE(threads_used(16, 2), 2u);
  EXPECT_GE(threads_used(16, 4), 2u);  // the pool now holds 3 workers
  for (int round = 0; round < 20; ++round) {
    EXPECT_LE(threads_used(16, 2), 2u);
    EXPECT_EQ(threads_used(5, 1), 1u);
  }
}

// Prewake wakes sleeping workers without a job, from any thread, at any
// time: during a Run they may join it, but still only up to its `threads`,
// and every part still runs exactly once.
TEST(ThreadPool, PrewakeFromAnotherThreadKeepsRunsExactAndWithinTheirThreads) {
  ThreadPool pool;
  pool.Run(
      4, [](int) { std::this_thread::sleep_for(std::chrono::microseconds(200)); }, 4);  // 3 workers
  std::atomic<bool> stop{false};
  std::atomic<int64_t> prewakes{0};
  std::thread waker([&] {
    while (!stop.load()) {
      pool.Prewake();
      prewakes.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  for (int round = 0; round < 500; ++round) {
    std::mutex mu;
    std::set<std::thread::id> ids;
    std::vector<std::atomic<int>> hits(8);
    pool.Run(
        8,
        [&](int p) {
          hits[p].fetch_add(1);
          std::lock_guard<std::mutex> lock(mu);
          ids.insert(std::this_thread::get_id());
        },
        2);
    for (int p = 0; p < 8; ++p) ASSERT_EQ(hits[p].load(), 1) << "round " << round << " part " << p;
    ASSERT_LE(ids.size(), 2u) << "round " << round;
    if (round % 5 == 0) pool.Park();
    if (round % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let them sleep
  }
  stop = true;
  waker.join();
  EXPECT_GT(prewakes.load(), 0);
  // With no Run to find, prewoken workers go back to sleep; a later Run wakes them.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::atomic<int> n{0};
  pool.Run(
      4, [&](int) { n.fetch_add(1); }, 2);
  EXPECT_EQ(n.load(), 4);
}

// Its workers are named for whoever profiles the process (top -H, perf).
TEST(ThreadPool, WorkersAreNamedTroupePool) {
  const int before = CountThreadsNamed("troupe-pool");
  {
    ThreadPool pool;
    std::atomic<int> n{0};
    pool.Run(
        3, [&](int) { n.fetch_add(1); }, 3);  // starts 2 workers
    EXPECT_EQ(n.load(), 3);
#if defined(__linux__)
    for (int i = 0; i < 200 && CountThreadsNamed("troupe-pool") < before + 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(CountThreadsNamed("troupe-pool"), before + 2);
#endif
  }
  EXPECT_EQ(CountThreadsNamed("troupe-pool"), before);  // joined with the pool
}

}  // namespace
}  // namespace troupe

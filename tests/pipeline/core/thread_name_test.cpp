// NameThisThread names the calling thread as the OS shows it, cut at 15
// bytes; CountThreadsNamed finds the process's threads by that name.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/thread_name.h"

namespace troupe {
namespace {

// The name a new thread reads back after naming itself `name`.
std::string NamedOnANewThread(const std::string& name) {
  std::string inside;
  std::thread t([&] {
    NameThisThread(name);
    inside = ThisThreadName();
  });
  t.join();
  return inside;
}

TEST(ThreadName, NamesTheCallingThreadOnly) {
  const std::string before = ThisThreadName();
  const std::string inside = NamedOnANewThread("troupe-test");
#if defined(__linux__)
  EXPECT_EQ(inside, "troupe-test");
#endif
  EXPECT_EQ(ThisThreadName(), before);
}

TEST(ThreadName, CountsTheProcesssThreadsByName) {
  const int before = CountThreadsNamed("troupe-counted");
  std::mutex mu;
  std::condition_variable cv;
  int named = 0;
  bool release = false;
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      NameThisThread("troupe-counted");
      std::unique_lock<std::mutex> lock(mu);
      ++named;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return named == 3; });
  }
#if defined(__linux__)
  EXPECT_EQ(CountThreadsNamed("troupe-counted"), before + 3);
#endif
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  for (auto& t : threads) t.join();
  EXPECT_EQ(CountThreadsNamed("troupe-counted"), before);
}

TEST(ThreadName, LongNamesAreCutAtFifteenBytes) {
  const std::string inside = NamedOnANewThread("troupe-a-very-long-thread-name");
#if defined(__linux__)
  EXPECT_EQ(inside, "troupe-a-very-l");
#endif
}

}  // namespace
}  // namespace troupe

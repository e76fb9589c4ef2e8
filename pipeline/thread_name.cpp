#include "pipeline/thread_name.h"

#if defined(__linux__)
#include <pthread.h>
#endif

#include <filesystem>
#include <fstream>

namespace troupe {

namespace {
constexpr size_t kMaxNameBytes = 15;  // Linux's TASK_COMM_LEN - 1
}  // namespace

void NameThisThread(const std::string& name) {
#if defined(__linux__)
  pthread_setname_np(pthread_self(), name.substr(0, kMaxNameBytes).c_str());
#else
  (void)name;
#endif
}

std::string ThisThreadName() {
#if defined(__linux__)
  char buf[kMaxNameBytes + 1] = {};
  if (pthread_getname_np(pthread_self(), buf, sizeof(buf)) == 0) return buf;
#endif
  return "";
}

int CountThreadsNamed(const std::string& name) {
  int n = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string line;
    if (std::getline(comm, line) && line == name.substr(0, kMaxNameBytes)) ++n;
  }
  return n;
}

}  // namespace troupe

// Test helpers for real multi-process tests: a child process with pipes to
// its stdin and stdout, and a temporary directory.
//
// ChildProcess kills (SIGKILL) and reaps its child on destruction if it is
// still running, so a failing test never leaves processes behind; TempDir
// removes its directory tree. Both belong to the test thread.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "pipeline/status.h"

namespace troupe::transport::testing {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with the given arguments; stderr is inherited.
  static Result<std::unique_ptr<ChildProcess>> Spawn(const std::vector<std::string>& argv);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  // The next line the child printed (without '\n'), waiting up to timeout_ms.
  // OutOfRange on timeout, NotFound at end of output.
  Result<std::string> ReadLine(int timeout_ms);
  // Reads lines until one starts with `prefix`; returns that line.
  Result<std::string> ReadLineStartingWith(const std::string& prefix, int timeout_ms);
  // Writes `line` + '\n' to the child's stdin.
  Status WriteLine(const std::string& line);

  // Waits for exit: the exit code, or 128 + signal. OutOfRange on timeout.
  Result<int> Wait(int timeout_ms);
  // Wait's exit code, or -1 on timeout or failure (convenient in EXPECT_EQ).
  int ExitCode(int timeout_ms) {
    Result<int> r = Wait(timeout_ms);
    return r.ok() ? r.value() : -1;
  }
  // SIGKILL and reap. Idempotent.
  void Kill();

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
  bool reaped_ = false;
  int exit_code_ = 0;
};

class TempDir {
 public:
  // mkdtemp under $TMPDIR or /tmp; path() is empty if that failed.
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The transport_peer helper next to the tests.
std::string PeerBinary();

}  // namespace troupe::transport::testing

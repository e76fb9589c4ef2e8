#include "cluster/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;

namespace troupe::cluster {

Result<pid_t> SpawnChild(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                         const std::string& log_path) {
  if (argv.empty()) return Status::InvalidArgument("spawn: empty argv");
  // Everything the child needs is built before fork.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  for (const auto& [name, value] : env) {
    if (std::getenv(name.c_str()) == nullptr) env_strings.push_back(name + "=" + value);
  }
  std::vector<char*> c_argv, c_env;
  for (const std::string& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  for (const std::string& e : env_strings) c_env.push_back(const_cast<char*>(e.c_str()));
  c_env.push_back(nullptr);
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return Status::IoError("cannot open " + log_path + ": " + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log);
    return Status::IoError(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    ::setpgid(0, 0);  // a terminal's Ctrl-C goes to `cluster up`, which stops the children in order
    const int null_in = ::open("/dev/null", O_RDONLY);
    if (null_in >= 0) ::dup2(null_in, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    ::execve(c_argv[0], c_argv.data(), c_env.data());
    ::_exit(127);
  }
  ::close(log);
  return pid;
}

bool ChildRunning(pid_t pid, int* exit_status) {
  int status = 0;
  const pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r == 0) return true;
  if (exit_status) *exit_status = r == pid ? status : 0;
  return false;
}

void StopChildren(const std::vector<pid_t>& pids, int grace_ms) {
  std::vector<pid_t> running;
  for (pid_t pid : pids) {
    if (pid > 0 && ChildRunning(pid)) {
      ::kill(pid, SIGINT);  // stop now (SIGTERM would make a shard drain first)
      running.push_back(pid);
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (!running.empty() && std::chrono::steady_clock::now() < deadline) {
    std::vector<pid_t> still;
    for (pid_t pid : running) {
      if (ChildRunning(pid)) still.push_back(pid);
    }
    running.swap(still);
    if (!running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (pid_t pid : running) {
    ::kill(pid, SIGKILL);
    int status;
    ::waitpid(pid, &status, 0);
  }
}

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

}  // namespace troupe::cluster

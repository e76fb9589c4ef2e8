// Child processes of `troupe cluster up`: started so that none outlives its
// parent, and stopped politely, then firmly.
//
// A child gets PR_SET_PDEATHSIG(SIGKILL) between fork and exec (the kernel
// kills it when the parent dies, SIGKILL included) and exits at once if the
// parent is already gone; the node itself also watches its parent's pid
// (config parent_pid) and stops when it changes. Signal mask and handlers are
// reset to the defaults in the child.
//
// Thread-safety: call from the main thread (PDEATHSIG follows the thread that
// forked). Spawn forks: prepare everything before, nothing but exec after.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "pipeline/status.h"

namespace troupe::cluster {

// Starts argv[0] (a path) with `argv` and `env` additions (NAME -> value, kept
// when already set), stdout and stderr appended to `log_path`.
Result<pid_t> SpawnChild(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                         const std::string& log_path);

// True while `pid` (a child) runs; reaps it and stores its status otherwise.
bool ChildRunning(pid_t pid, int* exit_status = nullptr);

// SIGTERM to every child, up to `grace_ms` for them to exit, then SIGKILL;
// reaps all of them.
void StopChildren(const std::vector<pid_t>& pids, int grace_ms);

// "exited with code 1" / "killed by signal 9".
std::string DescribeExit(int status);

}  // namespace troupe::cluster

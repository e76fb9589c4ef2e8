// NameThisThread: the name the OS shows for the calling thread (top -H, ps -L,
// perf, gdb, /proc/PID/task/TID/comm), so that an operator profiling a node
// sees which of its threads does what: troupe-loop (the poll loop that owns
// the sockets), troupe-pool (the kernels' helper threads), troupe-http...
// Linux keeps at most 15 bytes of a name; longer names are cut there. A
// no-op where the OS has no such call. Thread-safety: names only the caller.
#pragma once

#include <string>

namespace troupe {

void NameThisThread(const std::string& name);

// The calling thread's name as the OS holds it ("" if it cannot be read).
std::string ThisThreadName();

// How many of this process's threads bear `name` now (/proc/self/task; 0
// where that cannot be read).
int CountThreadsNamed(const std::string& name);

}  // namespace troupe

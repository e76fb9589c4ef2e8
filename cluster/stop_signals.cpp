#include "cluster/stop_signals.h"

#include <pthread.h>

namespace troupe::cluster {

StopSignals StopSignals::Block() {
  StopSignals s;
  sigemptyset(&s.set_);
  sigaddset(&s.set_, SIGINT);
  sigaddset(&s.set_, SIGTERM);
  sigaddset(&s.set_, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &s.set_, nullptr);
  return s;
}

bool StopSignals::Wait(int ms) const { return WaitSignal(ms) != 0; }

int StopSignals::WaitSignal(int ms) const {
  const timespec timeout{ms / 1000, static_cast<long>(ms % 1000) * 1000 * 1000};
  siginfo_t info;
  const int signal = sigtimedwait(&set_, &info, &timeout);
  return signal > 0 ? signal : 0;
}

bool StopSignals::Pending() {
  sigset_t pending;
  sigemptyset(&pending);
  if (sigpending(&pending) != 0) return false;
  return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1 ||
         sigismember(&pending, SIGHUP) == 1;
}

}  // namespace troupe::cluster

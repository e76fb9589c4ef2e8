// StopSignals: how a long-running troupe process (`troupe node`, `troupe
// cluster up`) learns it should stop — SIGINT, SIGTERM or SIGHUP, taken
// synchronously rather than by a handler.
//
// Block() must run in the main thread before any other thread exists, so that
// every thread inherits the mask and the signals wait for Wait(). Wait() may
// then be called from that thread in a loop beside other checks.
#pragma once

#include <signal.h>

namespace troupe::cluster {

class StopSignals {
 public:
  // Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and so in every
  // thread it starts afterwards).
  static StopSignals Block();

  // True when a signal arrived within `ms` milliseconds (and takes it).
  bool Wait(int ms) const;
  // The signal that arrived within `ms` milliseconds (taken), else 0 — for a
  // process that treats SIGHUP as "reload" rather than "stop".
  int WaitSignal(int ms) const;
  // True when a stop signal is pending, without taking it (a later Wait sees it).
  static bool Pending();

 private:
  sigset_t set_{};
};

}  // namespace troupe::cluster

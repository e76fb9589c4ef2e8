// KeyUsage: how many jobs each API key is running now — the accounting
// behind the per-key limit max_concurrent_jobs (http/api_keys.h).
//
// A request takes a Lease for its jobs (its choices) before it submits them
// and holds it until its answer is over (or its client left); dropping the
// Lease gives the jobs back. A key that would pass its limit gets no Lease,
// while every other key's count is untouched. Keys are counted by name, so a
// key reloaded with a new limit keeps its running jobs.
//
// Thread-safety: every method may be called from any thread; a Lease may be
// dropped on any thread, but must not outlive its KeyUsage.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace troupe::http {

class KeyUsage {
 public:
  class Lease {
   public:
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

   private:
    friend class KeyUsage;
    Lease(KeyUsage* usage, std::string name, int64_t jobs) : usage_(usage), name_(std::move(name)), jobs_(jobs) {}
    KeyUsage* usage_;
    std::string name_;
    int64_t jobs_;
  };

  // `jobs` more jobs for key `name`: a Lease when its running jobs plus
  // `jobs` stay within `max` (0 = no limit), else nullptr (nothing taken).
  std::unique_ptr<Lease> TryAcquire(const std::string& name, int64_t jobs, int64_t max);
  // Jobs key `name` runs now.
  int64_t running(const std::string& name) const;

 private:
  void Release(const std::string& name, int64_t jobs);
  mutable std::mutex mu_;
  std::map<std::string, int64_t> running_;  // guarded by mu_; no zero entries
};

}  // namespace troupe::http

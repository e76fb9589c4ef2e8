#include "http/key_usage.h"

namespace troupe::http {

KeyUsage::Lease::~Lease() { usage_->Release(name_, jobs_); }

std::unique_ptr<KeyUsage::Lease> KeyUsage::TryAcquire(const std::string& name, int64_t jobs, int64_t max) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t& n = running_[name];
  if (max > 0 && n + jobs > max) {
    if (n == 0) running_.erase(name);
    return nullptr;
  }
  n += jobs;
  return std::unique_ptr<Lease>(new Lease(this, name, jobs));
}

int64_t KeyUsage::running(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = running_.find(name);
  return it == running_.end() ? 0 : it->second;
}

void KeyUsage::Release(const std::string& name, int64_t jobs) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = running_.find(name);
  if (it == running_.end()) return;
  it->second -= jobs;
  if (it->second <= 0) running_.erase(it);
}

}  // namespace troupe::http

#include "http/connection_pool.h"

#include "pipeline/thread_name.h"

namespace troupe::http {
namespace {

// The client whose connection this worker thread serves now ("" = none yet).
thread_local std::string tl_client;

}  // namespace

ConnectionPool::ConnectionPool(size_t max_threads, size_t max_per_client, std::chrono::milliseconds idle_exit)
    : max_threads_(std::max<size_t>(1, max_threads)),
      max_per_client_(std::max<size_t>(1, max_per_client)),
      idle_exit_(idle_exit) {}

ConnectionPool::~ConnectionPool() { shutdown(); }

void ConnectionPool::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_) return;  // the listener has stopped: nothing is served any more
  ReapLocked();
  queue_.push_back(std::move(fn));
  if (idle_ >= queue_.size() || workers_.size() >= max_threads_) {
    cv_.notify_one();
    return;
  }
  std::thread t([this] {
    NameThisThread("troupe-http-req");
    Work();
  });
  const std::thread::id id = t.get_id();
  workers_.emplace(id, std::move(t));
}

void ConnectionPool::ReapLocked() {
  // A worker lists itself in exited_ as the last thing it does under mu_, so
  // holding mu_ here means it is past every use of this object.
  for (const std::thread::id& id : exited_) {
    auto it = workers_.find(id);
    if (it == workers_.end()) continue;
    it->second.join();
    workers_.erase(it);
  }
  exited_.clear();
}

void ConnectionPool::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    ++idle_;
    cv_.wait_for(lock, idle_exit_, [this] { return shutdown_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) break;  // idle too long, or shutting down with nothing left to serve
    std::function<void()> fn = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    fn();  // serves one connection to its close
    Finished();
    lock.lock();
  }
  exited_.push_back(std::this_thread::get_id());
}

void ConnectionPool::Finished() {
  if (tl_client.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = per_client_.find(tl_client);
  if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
  tl_client.clear();
}

bool ConnectionPool::Admit(const std::string& client) {
  if (!tl_client.empty()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  size_t& n = per_client_[client];
  if (n >= max_per_client_) {
    if (n == 0) per_client_.erase(client);
    return false;
  }
  ++n;
  tl_client = client.empty() ? "?" : client;
  return true;
}

size_t ConnectionPool::connections_of(const std::string& client) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = per_client_.find(client);
  return it == per_client_.end() ? 0 : it->second;
}

size_t ConnectionPool::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return workers_.size() - exited_.size();
}

void ConnectionPool::shutdown() {
  std::map<std::thread::id, std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
    workers.swap(workers_);
  }
  cv_.notify_all();
  for (auto& [id, t] : workers) t.join();  // each serves what is queued first
  std::lock_guard<std::mutex> lock(mu_);
  exited_.clear();
}

}  // namespace troupe::http

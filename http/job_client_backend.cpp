#include "http/job_client_backend.h"

namespace troupe::http {
namespace {

class JobClientBackend : public JobBackend {
 public:
  explicit JobClientBackend(std::unique_ptr<client::JobClient> client) : client_(std::move(client)) {}
  Result<uint64_t> Submit(const v1::JobSubmit& job) override { return client_->Submit(job); }
  Result<Event> Next(const std::function<bool()>& cancelled) override { return client_->Next(cancelled); }
  void Cancel() override { client_->Cancel(); }
  Result<v1::MetricsSnapshot> Metrics() override { return client_->Metrics(); }
  Result<std::string> Console(const std::string& view, uint64_t session_id, double seconds) override {
    return client_->Console(view, session_id, seconds);
  }
  Result<v1::JobStatus> JobStatusOf(uint64_t job_id) override { return client_->JobStatusOf(job_id); }
  Result<v1::JobStatus> CancelJob(uint64_t job_id) override { return client_->CancelJob(job_id); }
  Result<v1::NodeDrainStatus> DrainNode(const std::string& node_id, double timeout_seconds) override {
    return client_->DrainNode(node_id, timeout_seconds);
  }

 private:
  std::unique_ptr<client::JobClient> client_;
};

}  // namespace

BackendFactory JobClientBackends(const client::JobClientOptions& options) {
  return [options]() -> Result<std::unique_ptr<JobBackend>> {
    TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<client::JobClient> c, client::JobClient::Connect(options));
    return std::unique_ptr<JobBackend>(new JobClientBackend(std::move(c)));
  };
}

}  // namespace troupe::http

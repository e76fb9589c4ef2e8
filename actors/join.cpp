#include "actors/join.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <zmq.hpp>

#include "actors/node_security.h"
#include "messages/envelope_codec.h"
#include "messages/frames_codec.h"
#include "messages/wire_error.h"
#include "pipeline/format/layer_tensors.h"
#include "pipeline/format/model_source.h"
#include "pipeline/model/model_options.h"
#include "pipeline/model/torch_device.h"
#include "transport/link.h"

namespace troupe::actors {
namespace {

std::string Mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// The head's answer to one CoverageQuery, or kUnavailable when none came in `timeout_ms`.
Result<v1::Coverage> AskCoverage(transport::Connection& conn, const v1::Envelope& query, int timeout_ms) {
  WireResult<transport::Frames> frames = EncodeFrames(query, at::Tensor());
  if (!frames.ok()) return frames.error().ToStatus();
  TROUPE_RETURN_IF_ERROR(conn.Send(*frames));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Status::Unavailable("no answer");
    Result<transport::Frames> reply = conn.Receive(static_cast<int>(left.count()));
    if (!reply.ok()) return reply.status();
    DecodeLimits limits;
    WireResult<Received> got = DecodeFrames(*reply, limits, nullptr);
    if (!got.ok()) continue;
    const v1::Envelope& env = got->envelope;
    if (env.request_id() != query.request_id()) continue;  // an answer to an earlier try
    if (env.has_error()) return StatusFromError(env.error());
    if (env.has_coverage()) return env.coverage();
  }
}

}  // namespace

uint64_t DefaultMemoryBudget() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    uint64_t kib = 0;
    fields >> kib;
    return kib * 1024 / 10 * 9;
  }
  return 0;
}

Result<scheduling::LayerSpan> ChooseLayers(const cluster::NodeConfig& config, std::chrono::seconds wait,
                                           const std::function<bool()>& stopping) {
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<ModelSource> source, ModelSource::Open(config.model));
  ModelOptions options;
  options.device = config.device;
  options.backend = config.backend;
  options.dtype = config.dtype;
  TROUPE_ASSIGN_OR_RETURN(ResolvedBackend backend, ResolveBackend(options));
  // What the layers weigh where they will live: the file's blocks for the
  // kernels, values times the dtype for the torch backend (on a GPU, against
  // its free memory: weights and KV cache both live there).
  std::vector<uint64_t> layer_bytes = LayerBytes(*source);
  uint64_t budget = config.memory_budget_bytes;
  if (backend.backend == Backend::kTorch) {
    const uint64_t element = backend.dtype == "f32" ? 4 : 2;
    layer_bytes = LayerValues(*source);
    for (uint64_t& b : layer_bytes) b *= element;
    if (budget == 0 && backend.device != "cpu") {
      TROUPE_ASSIGN_OR_RETURN(DeviceMemory memory, DeviceMemoryOf(backend.device));
      budget = memory.free_bytes / 10 * 9;
    }
  }
  if (budget == 0) budget = DefaultMemoryBudget();
  Result<int64_t> fit = scheduling::LayersThatFit(layer_bytes, budget, config.cache_budget_bytes);
  if (!fit.ok()) return Status::InvalidArgument("layers: auto: " + fit.status().message());

  const cluster::PeerConfig* head = config.FindPeer(config.head_id);
  if (!head || head->endpoint.empty()) {
    return Status::InvalidArgument("layers: auto: no endpoint for head '" + config.head_id + "' (give join)");
  }
  TROUPE_ASSIGN_OR_RETURN(transport::SecurityConfig security, NodeLinkSecurity(config));
  zmq::context_t context(1);
  TROUPE_ASSIGN_OR_RETURN(auto conn, transport::Connection::Connect(context, head->endpoint, config.id + "/join",
                                                                    security, head->public_key));
  std::filesystem::path model_path(config.model);
  if (model_path.filename().empty()) model_path = model_path.parent_path();
  v1::Envelope query = NewEnvelope(1);
  v1::CoverageQuery* q = query.mutable_coverage_query();
  q->set_node_id(config.id);
  q->set_model_fingerprint(source->fingerprint());
  q->set_model_name(model_path.filename().string());

  const auto deadline = std::chrono::steady_clock::now() + wait;
  bool said = false;
  while (true) {
    Result<v1::Coverage> coverage = AskCoverage(*conn, query, 2000);
    if (coverage.ok()) {
      std::vector<uint32_t> replicas(coverage->replicas().begin(), coverage->replicas().end());
      replicas.resize(static_cast<size_t>(source->config().n_layers), 0);
      std::vector<scheduling::LayerSpan> spans;
      for (const v1::LayerRange& r : coverage->spans()) spans.push_back({r.begin(), r.end()});
      const scheduling::LayerSpan chosen = scheduling::ChooseSpan(replicas, spans, *fit);
      std::cerr << "troupe node " << config.id << ": layers auto: " << chosen.begin << "-" << chosen.end << " of "
                << replicas.size() << " (room for " << *fit << " in " << Mib(budget) << " with a "
                << Mib(config.cache_budget_bytes) << " cache budget)" << std::endl;
      return chosen;
    }
    if (coverage.status().code() != StatusCode::kUnavailable) {
      return Status(coverage.status().code(), "head at " + head->endpoint + " refused: " + coverage.status().message());
    }
    if (stopping && stopping()) return Status(StatusCode::kCancelled, "stopped while choosing layers");
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::DeadlineExceeded("layers: auto: no answer from head '" + config.head_id + "' at " +
                                      head->endpoint + " within " + std::to_string(wait.count()) +
                                      " s (is it up, and are the keys and allowlists right?)");
    }
    if (!said) {
      said = true;
      std::cerr << "troupe node " << config.id << ": waiting for head '" << config.head_id << "' at " << head->endpoint
                << " to choose layers" << std::endl;
    }
    query.set_request_id(query.request_id() + 1);
  }
}

}  // namespace troupe::actors

#include "actors/join.h"
#include "pipeline/log.h"

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

namespace {

// How many layers this node may serve, within its memory budget (config,
// else the GPU's free memory for torch on a GPU, else 90% of MemAvailable).
struct Room {
  int64_t layers = 0;
  uint64_t budget = 0;
};

Result<Room> RoomFor(const cluster::NodeConfig& config, const ModelSource& source) {
  ModelOptions options;
  options.device = config.device;
  options.backend = config.backend;
  options.dtype = config.dtype;
  TROUPE_ASSIGN_OR_RETURN(ResolvedBackend backend, ResolveBackend(options));
  // What the layers weigh where they will live: the file's blocks for the
  // kernels, values times the dtype for the torch backend (on a GPU, against
  // its free memory: weights and KV cache both live there).
  std::vector<uint64_t> layer_bytes = LayerBytes(source);
  uint64_t budget = config.memory_budget_bytes;
  if (backend.backend == Backend::kTorch) {
    const uint64_t element = backend.dtype == "f32" ? 4 : 2;
    layer_bytes = LayerValues(source);
    for (uint64_t& b : layer_bytes) b *= element;
    if (budget == 0 && backend.device != "cpu") {
      TROUPE_ASSIGN_OR_RETURN(DeviceMemory memory, DeviceMemoryOf(backend.device));
      budget = memory.free_bytes / 10 * 9;
    }
  }
  if (budget == 0) budget = DefaultMemoryBudget();
  Result<int64_t> fit = scheduling::LayersThatFit(layer_bytes, budget, config.cache_budget_bytes);
  if (!fit.ok()) return Status::InvalidArgument("layers: auto: " + fit.status().message());
  return Room{*fit, budget};
}

// A connection to the head with this node's keys, and the question to ask it.
struct HeadLine {
  std::string endpoint;
  zmq::context_t context{1};
  std::unique_ptr<transport::Connection> conn;
  v1::Envelope query;
};

Result<std::unique_ptr<HeadLine>> OpenHeadLine(const cluster::NodeConfig& config, const ModelSource& source) {
  const cluster::PeerConfig* head = config.FindPeer(config.head_id);
  if (!head || head->endpoint.empty()) {
    return Status::InvalidArgument("layers: auto: no endpoint for head '" + config.head_id + "' (give join)");
  }
  TROUPE_ASSIGN_OR_RETURN(transport::SecurityConfig security, NodeLinkSecurity(config));
  auto line = std::make_unique<HeadLine>();
  line->endpoint = head->endpoint;
  TROUPE_ASSIGN_OR_RETURN(line->conn, transport::Connection::Connect(line->context, head->endpoint, config.id + "/join",
                                                                     security, head->public_key));
  std::filesystem::path model_path(config.model);
  if (model_path.filename().empty()) model_path = model_path.parent_path();
  line->query = NewEnvelope(1);
  v1::CoverageQuery* q = line->query.mutable_coverage_query();
  q->set_node_id(config.id);
  q->set_model_fingerprint(source.fingerprint());
  q->set_model_name(model_path.filename().string());
  return line;
}

struct Counted {
  std::vector<uint32_t> replicas;
  std::vector<scheduling::LayerSpan> spans;
};

Counted CountsOf(const v1::Coverage& coverage, int64_t n_layers) {
  Counted c;
  c.replicas.assign(coverage.replicas().begin(), coverage.replicas().end());
  c.replicas.resize(static_cast<size_t>(n_layers), 0);
  for (const v1::LayerRange& r : coverage.spans()) c.spans.push_back({r.begin(), r.end()});
  return c;
}

}  // namespace

Result<scheduling::LayerSpan> ChooseLayers(const cluster::NodeConfig& config, std::chrono::seconds wait,
                                           const std::function<bool()>& stopping,
                                           std::optional<scheduling::LayerSpan> prefer) {
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<ModelSource> source, ModelSource::Open(config.model));
  TROUPE_ASSIGN_OR_RETURN(Room room, RoomFor(config, *source));
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<HeadLine> line, OpenHeadLine(config, *source));
  const auto deadline = std::chrono::steady_clock::now() + wait;
  bool said = false;
  while (true) {
    Result<v1::Coverage> coverage = AskCoverage(*line->conn, line->query, 2000);
    if (coverage.ok()) {
      const Counted c = CountsOf(*coverage, source->config().n_layers);
      const scheduling::LayerSpan chosen = scheduling::ChooseSpan(c.replicas, c.spans, room.layers, prefer);
      logging::Info(logging::Cat("layers auto: ", chosen.begin, "-", chosen.end, " of ", c.replicas.size(),
                                 " (room for ", room.layers, " in ", Mib(room.budget), " with a ",
                                 Mib(config.cache_budget_bytes), " cache budget)"));
      return chosen;
    }
    if (coverage.status().code() != StatusCode::kUnavailable) {
      return Status(coverage.status().code(), "head at " + line->endpoint + " refused: " + coverage.status().message());
    }
    if (stopping && stopping()) return Status(StatusCode::kCancelled, "stopped while choosing layers");
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::DeadlineExceeded("layers: auto: no answer from head '" + config.head_id + "' at " +
                                      line->endpoint + " within " + std::to_string(wait.count()) +
                                      " s (is it up, and are the keys and allowlists right?)");
    }
    if (!said) {
      said = true;
      logging::Info(logging::Cat("waiting for head '", config.head_id, "' at ", line->endpoint, " to choose layers"));
    }
    line->query.set_request_id(line->query.request_id() + 1);
  }
}

Result<std::optional<Move>> CheckMove(const cluster::NodeConfig& config) {
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<ModelSource> source, ModelSource::Open(config.model));
  TROUPE_ASSIGN_OR_RETURN(Room room, RoomFor(config, *source));
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<HeadLine> line, OpenHeadLine(config, *source));
  TROUPE_ASSIGN_OR_RETURN(v1::Coverage coverage, AskCoverage(*line->conn, line->query, 2000));
  const Counted c = CountsOf(coverage, source->config().n_layers);
  const scheduling::LayerSpan current{config.layer_begin, config.layer_end};
  std::optional<scheduling::LayerSpan> to = scheduling::BetterSpan(c.replicas, c.spans, current, room.layers);
  if (!to) return std::optional<Move>();
  std::vector<uint32_t> after = c.replicas;
  for (int64_t l = current.begin; l < current.end; ++l) after[l]--;
  for (int64_t l = to->begin; l < to->end; ++l) after[l]++;
  return std::optional<Move>(Move{*to, scheduling::WeakestCoverage(c.replicas), scheduling::WeakestCoverage(after)});
}

}  // namespace troupe::actors

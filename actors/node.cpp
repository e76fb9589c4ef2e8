#include "actors/node.h"
#include "pipeline/log.h"

#include <ATen/Parallel.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "actors/bridge.h"
#include "actors/embedding_actor.h"
#include "actors/join.h"
#include "actors/lm_head_actor.h"
#include "actors/local_messages.h"
#include "actors/node_context.h"
#include "actors/node_security.h"
#include "actors/sampler_actor.h"
#include "actors/scheduler_actor.h"
#include "actors/shard_actor.h"
#include "client/job_client.h"
#include "cluster/stop_signals.h"
#include "http/http_server.h"
#include "http/job_client_backend.h"
#include "http/key_store.h"
#include "http/metrics_server.h"
#include "http/openai_api.h"
#include "pipeline/model/decoder.h"
#include "pipeline/model/model_options.h"
#include "pipeline/model/torch_device.h"
#include "pipeline/text/prompt.h"
#include "scheduling/admission.h"
#include "scheduling/metrics_query.h"
#include "transport/keys.h"
#include "transport/links.h"
#include "transport/zap_handler.h"

namespace troupe::actors {

// How long a shard with `layers: auto` waits for its head to answer.
constexpr std::chrono::seconds kJoinWait{300};

// Members in construction order; Stop() tears them down in the order CAF 0.17
// and ZeroMQ need (see node.h).
struct Node::Impl {
  std::shared_ptr<NodeContext> ctx;
  std::shared_ptr<Decoder> decoder;  // shard
  std::unique_ptr<zmq::context_t> zmq_context;
  std::unique_ptr<transport::ZapHandler> zap;
  std::unique_ptr<Bridge> bridge;
  std::unique_ptr<transport::PollLoop> loop;
  std::unique_ptr<transport::Links> links;
  std::unique_ptr<caf::actor_system_config> caf_config;
  std::unique_ptr<caf::actor_system> system;
  std::vector<caf::actor> actors;
  std::shared_ptr<http::KeyStore> keys;  // head with endpoints.http and keys configured
  std::unique_ptr<http::HttpServer> http;
  std::unique_ptr<http::MetricsServer> metrics;  // endpoints.metrics: this node's own /metrics
  bool stopped = false;
};

Node::Node(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Node::~Node() { Stop(); }

const std::string& Node::id() const { return impl_->ctx->node_id; }
bool Node::Draining() const { return impl_->ctx->draining; }
uint64_t Node::LiveSessions() const { return impl_->ctx->counters.sessions_open; }
double Node::DrainTimeout() const { return impl_->ctx->drain_timeout_seconds; }
uint64_t Node::StepsTotal() const { return impl_->ctx->counters.steps_total; }
void Node::BeginDrain() {
  // The shard actor drops its parked caches when the head's Drain closes them;
  // the heartbeat (within a second) tells the head, which moves the rest.
  impl_->ctx->draining = true;
}
void Node::BeginClosing() {
  if (impl_->ctx->scheduler) caf::anon_send(impl_->ctx->scheduler, closing_atom::value);
}
uint64_t Node::ActiveJobs() const { return impl_->ctx->counters.jobs_active; }
const std::string& Node::node_endpoint() const { return impl_->ctx->node_endpoint; }
const std::string& Node::job_endpoint() const { return impl_->ctx->job_endpoint; }
int Node::http_port() const { return impl_->http ? impl_->http->port() : 0; }
int Node::metrics_port() const { return impl_->metrics ? impl_->metrics->port() : 0; }

namespace {

// Logs each refused handshake once per address, key and domain, counts
// every one (actors/refusals.h), and tells a head's scheduler when the key
// is a node's it knows: that node can send the head nothing.
transport::ZapRefusalFn RefusalLogger(std::shared_ptr<NodeContext> ctx) {
  return [ctx = std::move(ctx)](const transport::ZapRefusal& r) {
    const std::string node = ctx->links ? ctx->links->NodeOfKey(r.public_key) : "";
    if (ctx->refusals.Handshake(r, node)) {
      logging::Warn(Refusals::Describe(r, node));
    }
    if (!node.empty() && ctx->scheduler && r.domain == transport::kDefaultZapDomain) {
      caf::anon_send(ctx->scheduler, NodeTrouble{node, "this head refused its CURVE key (" + r.reason + ")", false});
    }
  };
}

std::string ModelName(const std::string& path) {
  std::filesystem::path model(path);
  if (model.filename().empty()) model = model.parent_path();  // "folder/"
  return model.filename().string();
}

Status LoadModel(const cluster::NodeConfig& c, NodeContext* ctx, std::shared_ptr<Decoder>* decoder) {
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<ModelSource> source, ModelSource::Open(c.model));
  ctx->fingerprint = source->fingerprint();
  ctx->incarnation = std::random_device{}() | (uint64_t{std::random_device{}()} << 32) | 1;
  ctx->model_name = ModelName(c.model);
  ModelOptions options;
  options.threads = c.threads;
  options.device = c.device;
  options.backend = c.backend;
  options.dtype = c.dtype;
  if (c.RunsEmbedding()) {
    TROUPE_ASSIGN_OR_RETURN(ctx->embedding, Embedding::Load(*source));
  }
  if (c.RunsLmHead()) {
    TROUPE_ASSIGN_OR_RETURN(ctx->lm_head, LmHead::Load(*source, options));
    if (!c.head) logging::Info(logging::Cat("LM head on ", ctx->lm_head->Describe()));
    ctx->device_text = ctx->lm_head->Describe();
  }
  if (c.head) {
    ctx->timelines = std::make_shared<scheduling::Timelines>();
    TROUPE_ASSIGN_OR_RETURN(auto tokenizer, Tokenizer::Create(source->tokenizer_spec()));
    ctx->tokenizer = std::move(tokenizer);
    if (!c.amateur_model.empty()) {
      TROUPE_ASSIGN_OR_RETURN(ctx->amateur, AmateurModel::Load(c.amateur_model, options, *source));
    }
  }
  if (c.shard) {
    TROUPE_ASSIGN_OR_RETURN(auto d, Decoder::Load(*source, c.layer_begin, c.layer_end, options));
    logging::Info(logging::Cat("layers ", c.layer_begin, "-", c.layer_end, " on ", d->Describe()));
    ctx->device_text = d->Describe();
    // On a GPU the KV caches share the device with the weights just loaded:
    // the cache budget is held to 90 % of what is free now.
    if (Result<DeviceMemory> memory = DeviceMemoryOf(d->cache_shape().device); memory.ok()) {
      const uint64_t room = memory->free_bytes / 10 * 9;
      if (ctx->config.cache_budget_bytes > room) {
        logging::Info(logging::Cat("cache budget ", (ctx->config.cache_budget_bytes >> 20), " MiB lowered to ",
                                   (room >> 20), " MiB, 90 % of ", d->cache_shape().device, "'s free memory"));
        ctx->config.cache_budget_bytes = room;
      }
    }
    *decoder = std::move(d);
  }
  // A head checks every layer a shard announces; a shard digests its own.
  // Every page hashed is handed back: a layer this node does not serve is
  // not read again, and the decoder loaded above runs its layers from its
  // own copy (weight_arena.h), or faults them back in from the page cache.
  const int64_t digest_begin = c.head ? 0 : c.layer_begin;
  const int64_t digest_end = c.head ? source->config().n_layers : c.layer_end;
  TROUPE_ASSIGN_OR_RETURN(LayerDigests digests,
                          LayerDigests::Compute(*source, digest_begin, digest_end, /*serve_begin=*/0, /*serve_end=*/0));
  ctx->digests = std::make_shared<const LayerDigests>(std::move(digests));
  ctx->source = std::move(source);
  at::set_num_threads(ResolveThreads(options));
  return Status::Ok();
}

// The job endpoint's security: plain, or CURVE with the node's keys in the
// job ZAP domain, whose allowlist is the client allowlist plus the head's
// own key (its HTTP API is a client of the job endpoint).
Result<transport::SecurityConfig> JobSecurity(const cluster::NodeConfig& c, const transport::SecurityConfig& node) {
  if (!cluster::JobEndpointCurve(c)) return transport::PlainSecurity();
  transport::SecurityConfig job = node;
  job.zap_domain = transport::kJobZapDomain;
  job.allowlist = transport::Allowlist();
  if (!c.client_allowlist.empty()) {
    TROUPE_ASSIGN_OR_RETURN(job.allowlist, transport::LoadAllowlist(c.client_allowlist));
  }
  TROUPE_RETURN_IF_ERROR(job.allowlist.Add(node.keys.public_key));
  return job;
}

// Counts a job's prompt tokens as the scheduler's admission would (for a
// key's max_prompt_tokens); -1 when admission would refuse it anyway.
std::function<int64_t(const v1::JobSubmit&)> PromptCounter(const std::shared_ptr<NodeContext>& ctx) {
  return [ctx](const v1::JobSubmit& job) -> int64_t {
    auto tokenize = [&ctx](const PromptRequest& r) {
      return PromptTokens(*ctx->tokenizer, ctx->source->tokenizer_spec(), r);
    };
    const int64_t any = std::numeric_limits<int64_t>::max();
    WireResult<scheduling::AdmittedJob> admitted =
        scheduling::Admit(job, tokenize, {any, any, ctx->config.amateur_model});
    return admitted.ok() ? static_cast<int64_t>(admitted->prompt.size()) : -1;
  };
}

Result<std::shared_ptr<http::KeyStore>> LoadKeys(const cluster::NodeConfig& c) {
  http::KeySources sources;
  sources.flag_keys = c.api_keys;
  sources.key_file = c.api_key_file;
  sources.admin_key_file = c.admin_key_file;
  if (!sources.any()) return std::shared_ptr<http::KeyStore>();
  return http::KeyStore::Load(std::move(sources));
}

Result<std::unique_ptr<http::HttpServer>> StartHttp(const cluster::NodeConfig& c, const std::string& job_endpoint,
                                                    const std::shared_ptr<NodeContext>& ctx,
                                                    std::shared_ptr<http::KeyStore> keys) {
  http::HttpServerOptions options;
  options.keys = std::move(keys);
  options.count_prompt_tokens = PromptCounter(ctx);
  TROUPE_RETURN_IF_ERROR(cluster::ParseHostPort(c.http_listen, &options.host, &options.port));
  options.model_id = ModelName(c.model);
  options.node_id = c.id;
  client::JobClientOptions to_head;
  to_head.endpoint = job_endpoint;
  to_head.first_reply_ms = 10000;
  to_head.idle_ms = static_cast<int>(c.step_timeout_seconds * 1000) + 30000;
  if (cluster::JobEndpointCurve(c)) {
    // The job endpoint is CURVE here: the head talks to itself with its own key.
    TROUPE_ASSIGN_OR_RETURN(to_head.server_key, transport::ReadPublicKeyFile(c.secret_key_file));
    to_head.client_key_file = c.secret_key_file;
  }
  options.connect = http::JobClientBackends(to_head);
  return http::HttpServer::Start(std::move(options));
}

}  // namespace

Result<std::unique_ptr<Node>> Node::Start(const cluster::NodeConfig& config) {
  auto impl = std::make_unique<Impl>();
  auto ctx = std::make_shared<NodeContext>();
  ctx->config = config;
  ctx->node_id = config.id;
  impl->ctx = ctx;
  std::unique_ptr<Node> node(new Node(std::move(impl)));
  Impl& m = *node->impl_;
  TROUPE_RETURN_IF_ERROR(LoadModel(config, ctx.get(), &m.decoder));

  TROUPE_ASSIGN_OR_RETURN(transport::SecurityConfig security, NodeLinkSecurity(config));
  if (security.curve) ctx->public_key = security.keys.public_key;
  transport::SecurityConfig job_security = transport::PlainSecurity();
  if (config.head) {
    TROUPE_ASSIGN_OR_RETURN(job_security, JobSecurity(config, security));
  }
  m.zmq_context = std::make_unique<zmq::context_t>(1);
  if (security.curve) {
    std::map<std::string, transport::Allowlist> domains = {{security.zap_domain, security.allowlist}};
    if (job_security.curve) domains[job_security.zap_domain] = job_security.allowlist;
    TROUPE_ASSIGN_OR_RETURN(m.zap,
                            transport::ZapHandler::Start(*m.zmq_context, std::move(domains), RefusalLogger(ctx)));
  }
  m.bridge = std::make_unique<Bridge>(ctx);
  transport::PollLoopOptions loop_options;
  loop_options.outbox_hwm = 64;
  TROUPE_ASSIGN_OR_RETURN(m.loop, transport::PollLoop::Start(*m.zmq_context, m.bridge->Callbacks(), loop_options));
  transport::LinksConfig links_config;
  links_config.node_id = config.id;
  links_config.security = security;
  for (const cluster::PeerConfig& p : config.peers) links_config.peer_keys[p.id] = p.public_key;
  links_config.log = [id = config.id](const std::string& line) { logging::Info(logging::Cat(line)); };
  m.links = std::make_unique<transport::Links>(*m.zmq_context, *m.loop, std::move(links_config));
  ctx->loop = m.loop.get();
  ctx->links = m.links.get();

  // Bind first (the node's addresses go into routes and announces), poll later.
  TROUPE_ASSIGN_OR_RETURN(auto node_listener, m.links->Bind(config.listen, security));
  ctx->node_endpoint = config.advertise.empty() ? node_listener->endpoint() : config.advertise;
  std::unique_ptr<transport::Listener> job_listener;
  if (config.head) {
    TROUPE_ASSIGN_OR_RETURN(job_listener, m.links->Bind(config.job_listen, job_security));
    ctx->job_endpoint = job_listener->endpoint();
  }

  // One CAF worker for compute and one for everything else: compute threads
  // (the kernels' OpenMP team) then stay within `threads` per process.
  m.caf_config = std::make_unique<caf::actor_system_config>();
  m.caf_config->set("scheduler.max-threads", 2);
  // Work stealing without its busy phase: an idle worker spins briefly, then
  // sleeps on a condition variable that a message from the bridge wakes (the
  // default polls every 50 us for a while, which several nodes on a few cores
  // cannot afford). A message an actor sends stays on its worker's own queue,
  // so the LM head -> sampler -> embedding chain runs without a thread switch;
  // the other worker steals it only when its sleep times out. That timeout is
  // 10 ms: at 1 ms the idle workers of four nodes on two cores woke 8000
  // times a second and preempted the kernels (one session through head + 3
  // shards: 10-15 % slower in 6 alternated runs; 16 sessions: no difference).
  m.caf_config->set("work-stealing.aggressive-poll-attempts", 50);
  m.caf_config->set("work-stealing.moderate-poll-attempts", 0);
  m.caf_config->set("work-stealing.relaxed-steal-interval", 1);
  m.caf_config->set("work-stealing.relaxed-sleep-duration", caf::timespan(std::chrono::milliseconds(10)));
  m.system = std::make_unique<caf::actor_system>(*m.caf_config);
  // Actors start lazily: none runs before every handle below is in place.
  if (config.head) {
    TROUPE_ASSIGN_OR_RETURN(auto journal, scheduling::JobJournal::Open(config.job_journal));
    auto book = std::make_unique<scheduling::JobBook>(scheduling::BookConfig{config.id, config.job_retention_seconds},
                                                      std::move(journal));
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    TROUPE_ASSIGN_OR_RETURN(std::vector<scheduling::JournaledJob> recovered, book->Recover(now));
    logging::Info(logging::Cat(
        "job journal ",
        (config.job_journal.empty() ? std::string("in memory (set job_journal to keep jobs across restarts)")
                                    : config.job_journal),
        ": ", recovered.size(), " unfinished job(s) to run again, ", book->size() - recovered.size(),
        " ended job(s) kept"));
    ctx->scheduler = SpawnScheduler(*m.system, ctx, std::move(book), std::move(recovered));
    ctx->sampler = SpawnSampler(*m.system, ctx);
  }
  if (config.RunsEmbedding()) ctx->embedding_stage = SpawnEmbedding(*m.system, ctx);
  if (config.RunsLmHead()) ctx->lm_head_stage = SpawnLmHead(*m.system, ctx);
  if (config.shard) ctx->shard = SpawnShard(*m.system, ctx, m.decoder);
  for (const caf::actor& a : {ctx->scheduler, ctx->embedding_stage, ctx->lm_head_stage, ctx->sampler, ctx->shard}) {
    if (a) {
      m.actors.push_back(a);
      caf::anon_send(a, start_atom::value);  // runs make_behavior
    }
  }
  TROUPE_RETURN_IF_ERROR(m.links->AdoptNodeListener(std::move(node_listener)));
  if (job_listener) TROUPE_RETURN_IF_ERROR(m.links->AdoptJobListener(std::move(job_listener)));
  if (config.head && !config.http_listen.empty()) {
    TROUPE_ASSIGN_OR_RETURN(m.keys, LoadKeys(config));
    TROUPE_ASSIGN_OR_RETURN(m.http, StartHttp(config, ctx->job_endpoint, ctx, m.keys));
  }
  if (!config.metrics_listen.empty()) {
    std::string host;
    int port = 0;
    TROUPE_RETURN_IF_ERROR(cluster::ParseHostPort(config.metrics_listen, &host, &port));
    std::weak_ptr<NodeContext> weak = ctx;
    TROUPE_ASSIGN_OR_RETURN(m.metrics, http::MetricsServer::Start(host, port, [weak] {
                              std::shared_ptr<NodeContext> c = weak.lock();
                              if (!c) return std::string();
                              v1::MetricsSnapshot merged;
                              scheduling::MergeSnapshot(merged, NodeMetrics(*c));
                              return http::PrometheusText(merged);
                            }));
  }
  return node;
}

std::string Node::DescribeAccess() const {
  const Impl& m = *impl_;
  const cluster::NodeConfig& c = m.ctx->config;
  std::string out;
  if (c.head) {
    out = "job endpoint: ";
    if (!cluster::JobEndpointCurve(c)) {
      out += transport::IsLoopbackEndpoint(c.job_listen) ? "plain (loopback)" : "plain (insecure, not loopback)";
    } else if (c.client_allowlist.empty()) {
      out += "CURVE, no client_allowlist: only this head's own key may submit";
    } else {
      out += "CURVE, clients from " + c.client_allowlist;
    }
  }
  if (m.http) {
    out += "; HTTP API: ";
    out += m.keys ? "keys required (" + m.keys->Describe() + "), /health open"
                  : "OPEN, no API keys configured (anyone who reaches port " + std::to_string(m.http->port()) +
                        " may use it; admin routes shut)";
    const std::string http_host_port = c.http_listen.rfind("http://", 0) == 0 ? c.http_listen.substr(7) : c.http_listen;
    if (!m.keys && !transport::IsLoopbackEndpoint("tcp://" + http_host_port)) {
      out += " — WARNING: it listens on " + c.http_listen +
             ", reachable from the network without a key; give it api_keys or api_key_file";
    }
  }
  return out;
}

Status Node::ReloadKeys() {
  Impl& m = *impl_;
  if (!m.keys) return Status::Unsupported("no HTTP API keys are configured on this node");
  TROUPE_RETURN_IF_ERROR(m.keys->Reload());
  return Status::Ok();
}

std::string Node::DescribeKeys() const { return impl_->keys ? impl_->keys->Describe() : "no keys"; }

void Node::Stop() {
  Impl& m = *impl_;
  if (m.stopped) return;
  m.stopped = true;
  if (m.http) m.http->Drain();
  m.metrics.reset();
  if (m.system) {
    for (const caf::actor& a : m.actors) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    m.system->await_all_actors_done();  // on_exit closed every actor's outboxes
    // Let the bridge put the actors' last words (errors to clients) on the wire.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Its handlers are clients of the job endpoint: join them while the bridge
  // still delivers the head's answers.
  if (m.http) m.http->Stop();
  m.http.reset();
  if (m.loop) m.loop->Stop();  // joins the bridge thread
  if (m.ctx) m.ctx->ClearActors();
  m.actors.clear();
  m.bridge.reset();
  m.links.reset();
  m.loop.reset();
  m.system.reset();
  m.caf_config.reset();
  if (m.zap) m.zap->Stop();
  m.zap.reset();
  m.zmq_context.reset();
}

Status WriteReadyFile(const cluster::NodeConfig& config, const Node& node) {
  if (config.ready_file.empty()) return Status::Ok();
  nlohmann::json j = {
      {"id", node.id()},
      {"pid", static_cast<int>(::getpid())},
      {"role", config.head    ? "head"
               : config.shard ? "shard"
                              : "stages"},
      {"node_endpoint", node.node_endpoint()},
      {"job_endpoint", node.job_endpoint()},
      {"http_port", node.http_port()},
      {"metrics_port", node.metrics_port()},
      {"layers", {config.shard ? config.layer_begin : 0, config.shard ? config.layer_end : 0}},
  };
  const std::string tmp = config.ready_file + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) return Status::IoError("cannot write " + tmp);
    out << j.dump() << "\n";
  }
  if (std::rename(tmp.c_str(), config.ready_file.c_str()) != 0) {
    return Status::IoError("cannot rename " + tmp + " to " + config.ready_file);
  }
  return Status::Ok();
}

int RunNode(const cluster::NodeConfig& given) {
  // Before any other thread exists, so that every thread inherits the mask.
  const cluster::StopSignals stop = cluster::StopSignals::Block();
  cluster::NodeConfig config = given;
  // ValidateNodeConfig checked both names.
  {
    Result<logging::Level> level = logging::ParseLevel(config.log_level);
    Result<logging::Format> format = logging::ParseFormat(config.log_format);
    logging::Configure(config.id, level.ok() ? *level : logging::Level::kInfo,
                       format.ok() ? *format : logging::Format::kAuto);
  }
  auto parent_gone = [&] { return config.parent_pid > 0 && ::getppid() != config.parent_pid; };
  if (config.parent_pid > 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (parent_gone()) return 1;  // the parent died before we could watch it
  }
  if (config.layers_auto) {
    std::optional<scheduling::LayerSpan> prefer;  // where this node was moving to, if it was
    if (const char* to = std::getenv(kMoveToEnv)) {
      long long b = 0, e = 0;
      if (std::sscanf(to, "%lld-%lld", &b, &e) == 2) prefer = scheduling::LayerSpan{b, e};
      ::unsetenv(kMoveToEnv);
    }
    Result<scheduling::LayerSpan> span = ChooseLayers(
        config, kJoinWait, [&] { return stop.WaitSignal(0) != 0 || parent_gone(); }, prefer);
    if (!span.ok()) {
      logging::Error(logging::Cat(span.status().ToString()));
      return 1;
    }
    config.layer_begin = span->begin;
    config.layer_end = span->end;
  }
  Result<std::unique_ptr<Node>> node = Node::Start(config);
  if (!node.ok()) {
    logging::Error(logging::Cat(node.status().ToString()));
    return 1;
  }
  if (Status st = WriteReadyFile(config, **node); !st.ok()) {
    logging::Error(logging::Cat(st.ToString()));
    return 1;
  }
  const std::string stages = std::string(config.embedding ? " embedding" : "") + (config.lm_head ? " LM-head" : "");
  logging::Info(
      logging::Cat("",
                   (config.head    ? "head"
                    : config.shard ? "shard layers " + std::to_string(config.layer_begin) + "-" +
                                         std::to_string(config.layer_end) + (stages.empty() ? "" : " +" + stages)
                                   : "stage node:" + stages),
                   ", nodes on ", (*node)->node_endpoint(),
                   ((*node)->job_endpoint().empty() ? "" : ", jobs on " + (*node)->job_endpoint()),
                   ((*node)->http_port() > 0 ? ", HTTP API on port " + std::to_string((*node)->http_port()) : ""),
                   (config.curve ? " (CURVE)" : " (plain)")));
  if (config.head) logging::Info(logging::Cat((*node)->DescribeAccess()));
  const bool drains = (config.shard || config.StageNode()) && !config.head;
  // A stage node holds no session: it is busy while steps pass through it.
  uint64_t steps_seen = 0;
  auto last_step = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> drain_since;
  std::optional<std::chrono::steady_clock::time_point> closing_since;  // a head's SIGTERM
  uint64_t said = std::numeric_limits<uint64_t>::max();
  auto say = [&](const std::string& text) { logging::Info(logging::Cat(text)); };
  // Moving (layers: auto): ask every rebalance_seconds (jittered, so that
  // nodes do not all move at once) whether a better span raises the weakest
  // coverage; a second answer saying so, a little later, starts the move.
  const bool moves = config.layers_auto && config.shard && !config.head && config.rebalance_seconds > 0;
  std::mt19937_64 rng{std::random_device{}()};
  auto after = [&](double lo, double hi) {
    const double s = config.rebalance_seconds * std::uniform_real_distribution<double>(lo, hi)(rng);
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
  };
  auto next_check = after(0.5, 1.0);
  std::optional<scheduling::LayerSpan> seen;  // the span the last answer said to move to
  bool moving = false;
  scheduling::LayerSpan move_to;
  auto span_text = [](int64_t b, int64_t e) { return std::to_string(b) + "-" + std::to_string(e); };
  while (true) {
    const int signal = stop.WaitSignal(200);
    if (signal == SIGINT || signal == SIGTERM) moving = false;  // told to stop: no coming back
    if (signal == SIGHUP) {  // re-read the key files; a bad file keeps the keys in force
      Status st = (*node)->ReloadKeys();
      logging::Info(
          logging::Cat("SIGHUP: ", (st.ok() ? "keys reloaded: " + (*node)->DescribeKeys()
                                            : "keys not reloaded (the old ones stay in force): " + st.message())));
      continue;
    }
    if (signal == SIGTERM && config.head && !closing_since) {
      // A head closes: no new job; its running jobs finish; the queued ones
      // stay in the journal and run when it starts again.
      closing_since = std::chrono::steady_clock::now();
      (*node)->BeginClosing();
      say("SIGTERM: closing — no new job; the running ones finish (up to " +
          std::to_string(static_cast<int>(config.drain_timeout_seconds)) +
          " s), queued ones wait in the journal for the next start (SIGINT or a second SIGTERM leaves at once)");
      continue;
    }
    if (signal == SIGTERM && drains && !(*node)->Draining()) {
      (*node)->BeginDrain();
      say("SIGTERM: draining — no new session; the head moves the running ones to replicas or lets them finish "
          "(SIGINT or a second SIGTERM leaves at once)");
      continue;
    }
    if (signal != 0) break;
    if (parent_gone()) break;
    if (moves && !(*node)->Draining() && std::chrono::steady_clock::now() >= next_check) {
      Result<std::optional<Move>> move = CheckMove(config);
      if (move.ok() && move->has_value()) {
        const Move& m = **move;
        if (seen && seen->begin == m.to.begin && seen->end == m.to.end) {
          say("the cluster is lopsided: moving from layers " + span_text(config.layer_begin, config.layer_end) +
              " to " + span_text(m.to.begin, m.to.end) + " (weakest coverage " + std::to_string(m.weakest_now) +
              " -> " + std::to_string(m.weakest_after) + "): draining, then starting again");
          moving = true;
          move_to = m.to;
          (*node)->BeginDrain();
          continue;
        }
        seen = m.to;
        next_check = after(0.25, 0.5);
      } else {
        seen.reset();
        next_check = after(0.5, 1.0);
      }
    }
    if (closing_since) {
      const auto now = std::chrono::steady_clock::now();
      const uint64_t active = (*node)->ActiveJobs();
      // A moment at least: the scheduler has had the closing message and set the count.
      if (active == 0 && now - *closing_since > std::chrono::milliseconds(300)) {
        say("closed: no running job left; leaving");
        break;
      }
      if (now - *closing_since > std::chrono::duration<double>(config.drain_timeout_seconds)) {
        say("closing timeout: " + std::to_string(active) + " job(s) still running after " +
            std::to_string(static_cast<int>(config.drain_timeout_seconds)) +
            " s; leaving (they stay in the journal and run again when the head starts again)");
        break;
      }
      if (active != said) {
        say("closing: " + std::to_string(active) + " job(s) still running");
        said = active;
      }
      continue;
    }
    if (!drains || !(*node)->Draining()) continue;
    const auto now = std::chrono::steady_clock::now();
    if (!drain_since) drain_since = now;
    const double limit_s = (*node)->DrainTimeout() > 0 ? (*node)->DrainTimeout() : config.drain_timeout_seconds;
    const auto drain_limit = std::chrono::duration<double>(limit_s);
    uint64_t live = (*node)->LiveSessions();
    if (!config.shard) {
      const uint64_t steps = (*node)->StepsTotal();
      if (steps != steps_seen) steps_seen = steps, last_step = now;
      live = now - last_step < std::chrono::seconds(2) ? 1 : 0;
    }
    // A second at least: the head hears of the drain (heartbeats) before the link goes.
    if (live == 0 && now - *drain_since > std::chrono::milliseconds(1500)) {
      say("drained: no session left; leaving");
      break;
    }
    if (now - *drain_since > drain_limit) {
      say("drain timeout: " + std::to_string(live) + " session(s) still running after " +
          std::to_string(static_cast<int>(limit_s)) +
          " s; leaving (the head moves them to a replica or fails them naming this node)");
      break;
    }
    if (live > 0 && live != said) {
      say("draining: " + std::to_string(live) + " session(s) still running (waiting up to " +
          std::to_string(static_cast<int>(limit_s)) + " s)");
      said = live;
    }
  }
  // A node that cannot stop within 10 s must not linger.
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    std::_Exit(2);
  }).detach();
  (*node)->Stop();
  if (moving) ::setenv(kMoveToEnv, span_text(move_to.begin, move_to.end).c_str(), 1);
  return moving ? kExitToMove : 0;
}

}  // namespace troupe::actors

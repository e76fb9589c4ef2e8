#include "scheduling/console_views.h"

#include <algorithm>
#include <map>

namespace troupe::scheduling {
namespace {

double MsSince(ConsoleClock::time_point then, ConsoleClock::time_point now) {
  return std::chrono::duration<double, std::milli>(now - then).count();
}

std::string StateOf(const Registry& r, const ShardEntry& e, ConsoleClock::time_point now, std::string* detail) {
  if (!e.quarantine.empty()) {
    *detail = e.quarantine;
    return "quarantined";
  }
  if (e.draining) return "draining";
  if (!e.trouble.empty()) {
    *detail = e.trouble;
    return "trouble";
  }
  if (!r.IsAlive(e, now) || now - e.last_seen > kStaleAfter) {
    *detail = "no heartbeat for " + std::to_string(static_cast<int64_t>(MsSince(e.last_seen, now))) + " ms";
    return "stale";
  }
  if (!e.unreachable.empty()) {
    for (const auto& [node, why] : e.unreachable) *detail += (detail->empty() ? "" : "; ") + node + ": " + why;
    return "trouble";
  }
  return "ok";
}

const JobBook::Summary* Find(const std::vector<JobBook::Summary>& book, uint64_t job_id) {
  for (const JobBook::Summary& s : book) {
    if (s.job_id == job_id) return &s;
  }
  return nullptr;
}

}  // namespace

void TrackLost(const std::map<std::string, ShardEntry>& before, const std::map<std::string, ShardEntry>& now_known,
               ConsoleClock::time_point now, std::map<std::string, LostNode>* lost) {
  for (const auto& [id, e] : before) {
    if (!now_known.count(id)) (*lost)[id] = LostNode{e, now};
  }
  for (auto it = lost->begin(); it != lost->end();) {
    it = now_known.count(it->first) || now - it->second.since > kLostShown ? lost->erase(it) : std::next(it);
  }
}

std::string StageName(int stage) {
  switch (stage) {
    case v1::STAGE_EMBEDDING: return "embedding";
    case v1::STAGE_SHARD: return "shard";
    case v1::STAGE_LM_HEAD: return "lm_head";
    case v1::STAGE_SAMPLER: return "sampler";
    case v1::STAGE_SCHEDULER: return "scheduler";
    default: return "unknown";
  }
}

Json ClusterView(const ConsoleHead& head, const Registry& registry, const std::vector<JobLifecycle::JobView>& jobs,
                 ConsoleClock::time_point now) {
  size_t queued = 0;
  for (const auto& j : jobs) queued += j.live.state == v1::JOB_QUEUED ? 1 : 0;
  size_t nodes = 1;
  for (const auto& [id, e] : registry.All()) nodes += id != head.node_id && registry.IsAlive(e, now) ? 1 : 0;
  return Json{{"model", head.model_name},
              {"head", head.node_id},
              {"n_layers", head.n_layers},
              {"route_ready", head.route_problem.empty()},
              {"route_problem", head.route_problem},
              {"version", head.version},
              {"uptime_s", head.uptime_s},
              {"heartbeat_ttl_s", std::chrono::duration<double>(registry.ttl()).count()},
              {"time_ms", head.unix_ms},
              {"nodes", nodes},
              {"sessions", jobs.size() - queued},
              {"queued", queued}};
}

Json NodesView(const ConsoleHead& head, const Registry& registry, const std::map<std::string, LostNode>& lost,
               ConsoleClock::time_point now) {
  Json nodes = Json::array();
  Json stages = Json::array();
  if (head.runs_embedding) stages.push_back("embedding");
  if (head.runs_lm_head) stages.push_back("lm_head");
  stages.push_back("sampler");
  nodes.push_back(Json{{"id", head.node_id},
                       {"role", "head"},
                       {"endpoint", head.endpoint},
                       {"layers", nullptr},
                       {"stages", stages},
                       {"state", head.route_problem.empty() ? "ok" : "trouble"},
                       {"detail", head.route_problem},
                       {"last_heartbeat_ms", 0},
                       {"sessions", 0},
                       {"cache_bytes", 0},
                       {"cache_budget_bytes", 0},
                       {"step_ms", -1},
                       {"rtt_ms", -1},
                       {"tokens_per_s", head.tokens_per_s},
                       {"rss_bytes", head.rss_bytes},
                       {"version", head.version},
                       {"device", head.device}});
  for (const auto& [id, e] : registry.All()) {
    if (id == head.node_id) continue;
    std::string detail;
    const std::string state = StateOf(registry, e, now, &detail);
    Json node_stages = Json::array();
    for (int s : e.stages) node_stages.push_back(StageName(s));
    const bool shard = e.layer_end > e.layer_begin;
    nodes.push_back(Json{{"id", id},
                         {"role", shard ? "shard" : "stage"},
                         {"endpoint", e.endpoint},
                         {"layers", shard ? Json::array({e.layer_begin, e.layer_end}) : Json(nullptr)},
                         {"stages", node_stages},
                         {"state", state},
                         {"detail", detail},
                         {"last_heartbeat_ms", MsSince(e.last_seen, now)},
                         {"sessions", e.sessions},
                         {"cache_bytes", e.details.cache_bytes},
                         {"cache_budget_bytes", e.details.cache_budget_bytes},
                         {"step_ms", e.step_ms},
                         {"rtt_ms", e.rtt_ms},
                         {"tokens_per_s", e.details.steps_per_s},
                         {"rss_bytes", e.details.rss_bytes},
                         {"version", e.details.version},
                         {"device", e.details.device}});
  }
  for (const auto& [id, l] : lost) {
    const ShardEntry& e = l.entry;
    const bool shard = e.layer_end > e.layer_begin;
    Json node_stages = Json::array();
    for (int s : e.stages) node_stages.push_back(StageName(s));
    nodes.push_back(
        Json{{"id", id},
             {"role", shard ? "shard" : "stage"},
             {"endpoint", e.endpoint},
             {"layers", shard ? Json::array({e.layer_begin, e.layer_end}) : Json(nullptr)},
             {"stages", node_stages},
             {"state", "lost"},
             {"detail", "left the registry " + std::to_string(static_cast<int64_t>(MsSince(l.since, now) / 1000)) +
                            " s ago (" + (e.draining ? "drained" : "died, hung or cut off") + ")"},
             {"last_heartbeat_ms", MsSince(e.last_seen, now)},
             {"sessions", 0},
             {"cache_bytes", 0},
             {"cache_budget_bytes", e.details.cache_budget_bytes},
             {"step_ms", e.step_ms},
             {"rtt_ms", e.rtt_ms},
             {"tokens_per_s", 0.0},
             {"rss_bytes", e.details.rss_bytes},
             {"version", e.details.version},
             {"device", e.details.device}});
  }
  return Json{{"nodes", nodes}};
}

Json CoverageView(const Registry& registry, const std::map<std::string, LostNode>& lost, int64_t n_layers,
                  ConsoleClock::time_point now) {
  Json spans = Json::array();
  std::vector<uint32_t> replicas(static_cast<size_t>(std::max<int64_t>(0, n_layers)), 0);
  for (const auto& [id, e] : registry.All()) {
    if (e.layer_end <= e.layer_begin) continue;
    std::string detail;
    const std::string state = StateOf(registry, e, now, &detail);
    spans.push_back(Json{{"node", id}, {"begin", e.layer_begin}, {"end", e.layer_end}, {"state", state}});
    if (state != "ok") continue;
    for (int64_t l = e.layer_begin; l < std::min(e.layer_end, n_layers); ++l) replicas[l]++;
  }
  for (const auto& [id, l] : lost) {
    if (l.entry.layer_end <= l.entry.layer_begin) continue;
    spans.push_back(Json{{"node", id}, {"begin", l.entry.layer_begin}, {"end", l.entry.layer_end}, {"state", "lost"}});
  }
  return Json{{"n_layers", n_layers}, {"replicas", replicas}, {"spans", spans}};
}

Json JobsView(const std::vector<JobBook::Summary>& book, const std::vector<JobLifecycle::JobView>& jobs,
              ConsoleClock::time_point now, double unix_now) {
  std::vector<const JobLifecycle::JobView*> live;
  live.reserve(jobs.size());
  for (const auto& j : jobs) live.push_back(&j);
  std::stable_sort(live.begin(), live.end(), [](const auto* a, const auto* b) {
    const bool qa = a->live.state == v1::JOB_QUEUED, qb = b->live.state == v1::JOB_QUEUED;
    if (qa != qb) return qa;
    return qa ? a->live.queue_position < b->live.queue_position : a->submitted < b->submitted;
  });
  Json out = Json::array();
  std::map<uint64_t, bool> listed;
  for (const auto* j : live) {
    const JobBook::Summary* s = Find(book, j->job_id);
    listed[j->job_id] = true;
    out.push_back(Json{{"job_id", std::to_string(j->job_id)},
                       {"state", j->live.state == v1::JOB_QUEUED ? "queued" : "running"},
                       {"queue_position", j->live.queue_position},
                       {"tokens", s ? s->tokens : 0},
                       {"max_tokens", j->max_tokens},
                       {"priority", j->priority},
                       {"session_id", std::to_string(j->session_id)},
                       {"route", j->route},
                       {"age_ms", MsSince(j->submitted, now)}});
  }
  for (const JobBook::Summary& s : book) {
    if (listed.count(s.job_id)) continue;
    const char* state = !s.ended                           ? "queued"  // accepted, not yet opened (a restart)
                        : s.end_state == v1::JOB_COMPLETED ? "completed"
                                                           : "aborted";
    out.push_back(Json{{"job_id", std::to_string(s.job_id)},
                       {"state", state},
                       {"queue_position", 0},
                       {"tokens", s.tokens},
                       {"max_tokens", s.max_tokens},
                       {"priority", s.priority},
                       {"session_id", ""},
                       {"route", Json::array()},
                       {"age_ms", s.accepted_at > 0 ? (unix_now - s.accepted_at) * 1000 : 0.0}});
  }
  return Json{{"jobs", out}};
}

Json SessionsView(const std::vector<JobBook::Summary>& book, const std::vector<JobLifecycle::JobView>& jobs,
                  ConsoleClock::time_point now) {
  Json out = Json::array();
  for (const auto& j : jobs) {
    if (j.live.state == v1::JOB_QUEUED) continue;
    const JobBook::Summary* s = Find(book, j.job_id);
    out.push_back(Json{{"session_id", std::to_string(j.session_id)},
                       {"job_id", std::to_string(j.job_id)},
                       {"tokens", s ? s->tokens : 0},
                       {"max_tokens", j.max_tokens},
                       {"prompt_tokens", j.prompt_tokens},
                       {"route", j.route},
                       {"age_ms", MsSince(j.submitted, now)}});
  }
  return Json{{"sessions", out}};
}

Json TimelineView(uint64_t session_id, uint64_t job_id, const std::vector<StepTiming>& steps) {
  Json out = Json::array();
  for (const StepTiming& s : steps) {
    Json hops = Json::array();
    for (const HopTiming& h : s.hops) {
      hops.push_back(Json{{"node", h.node_id},
                          {"stage", StageName(h.stage)},
                          {"queue_ms", h.queue_ms},
                          {"compute_ms", h.compute_ms},
                          {"send_ms", h.send_ms}});
    }
    out.push_back(Json{{"index", s.index},
                       {"tokens", s.tokens},
                       {"total_ms", s.total_ms},
                       {"hops", hops},
                       {"network_ms", s.network_ms()}});
  }
  return Json{
      {"session_id", std::to_string(session_id)}, {"job_id", job_id ? std::to_string(job_id) : ""}, {"steps", out}};
}

Json HistoryView(const MetricHistory& history, double seconds, int64_t now_ms) {
  Json series = Json::object();
  for (const auto& [name, samples] : history.Last(seconds, now_ms)) {
    Json points = Json::array();
    for (const auto& [t, v] : samples) points.push_back(Json::array({t, v}));
    series[name] = points;
  }
  return Json{{"interval_s", history.interval().count() / 1000.0}, {"now_ms", now_ms}, {"series", series}};
}

}  // namespace troupe::scheduling

#include "actors/sampler_actor.h"

#include <ATen/core/Tensor.h>
#include <sys/resource.h>

#include <map>
#include <optional>

#include "actors/beam_steps.h"
#include "actors/stage_actor.h"
#include "messages/envelope_codec.h"
#include "messages/finish_reason_proto.h"
#include "pipeline/model/generation.h"
#include "pipeline/sampling/beam_search.h"
#include "pipeline/sampling/prompt_scorer.h"
#include "scheduling/burst_joiner.h"

namespace troupe::actors {
namespace {

constexpr auto kTick = std::chrono::seconds(1);

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double PeakRssMb() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

struct SamplerSession {
  SessionStart start;
  Generation generation;
  // Contrastive decoding: the amateur's cache for this session, fed from the
  // generation's tokens (a replay re-asks for the same row; see amateur.h).
  std::unique_ptr<AmateurSession> amateur;
  int64_t sampled = 0;   // tokens sampled so far (an eos id included)
  uint32_t replays = 0;  // times the session was replayed over a new route
  Clock::time_point first_token, last_token, last_activity;
  std::shared_ptr<BeamSearch> beams;  // beam search sessions only
  // Prompt logprobs (params.prompt_logprobs >= 0): scored from the prefill's
  // every-row logits, sent once as PromptLogprobs before the first Token.
  std::unique_ptr<PromptScorer> prompt_scorer;
  bool prompt_sent = false;
  Clock::time_point opened = Clock::now();  // when the sampler heard of it (the prefill's round starts about then)
  // A spot check's shadow of this session (scheduling/spot_checks.h), while it runs.
  struct ShadowRun {
    uint64_t id = 0;
    std::vector<v1::RouteHop> route;
    scheduling::DigestMatch match;
  };
  std::optional<ShadowRun> shadow;
};

class SamplerActor : public StageActor {
 public:
  SamplerActor(caf::actor_config& cfg, std::shared_ptr<NodeContext> ctx)
      : StageActor(cfg, std::move(ctx)), joiner_(BurstWait(*ctx_)) {}

  const char* name() const override { return "sampler"; }

  caf::behavior make_behavior() override {
    delayed_send(this, kTick, tick_atom::value);
    return {
        [this](SessionStart& s) { OnStart(s); },
        [this](const SessionDrop& d) {
          EndTimeline(d.session_id);
          EndShadow(d.session_id, std::nullopt);
          sessions_.erase(d.session_id);
          joiner_.Forget(d.session_id);
          FlushJoining();
        },
        [this](ShadowStart& s) { OnShadowStart(s); },
        [this](const ShadowStop& s) {
          if (auto it = sessions_.find(s.session_id); it != sessions_.end()) it->second.shadow.reset();
        },
        [this](SessionMove& m) { OnMove(m); },
        [this](const SessionResume& r) { OnResume(r.session_id); },
        [this](StepMessage& m) { OnBurstMember(m); },
        [this](burst_atom) {
          ReleaseBursts(/*all_late=*/true);
          FlushJoining();
        },
        [this](tick_atom) {
          CheckProgress();
          FlushJoining();
          delayed_send(this, kTick, tick_atom::value);
        },
        StartHandler(),
        RetryHandler(),
    };
  }

  void on_exit() override {
    StageActor::on_exit();
    sessions_.clear();
  }

 private:
  void OnStart(SessionStart& s) {
    const uint64_t id = s.session_id;
    Result<Generation> gen = Generation::Create(*ctx_->tokenizer, s.params, s.prompt);
    if (!gen.ok()) {
      return ReportFailure(id, v1::BAD_REQUEST, gen.status().ToString(), Origin{});
    }
    std::unique_ptr<AmateurSession> amateur;
    if (s.params.contrastive) {
      if (ctx_->amateur == nullptr) {  // admission refuses these; a direct SessionStart may not
        return ReportFailure(id, v1::BAD_REQUEST, "contrastive decoding needs an amateur model: this head has none",
                             Origin{});
      }
      Result<std::unique_ptr<AmateurSession>> opened = ctx_->amateur->OpenSession(s.max_length);
      if (!opened.ok()) return ReportFailure(id, v1::BAD_REQUEST, opened.status().ToString(), Origin{});
      amateur = std::move(*opened);
    }
    std::shared_ptr<BeamSearch> beams;
    if (s.params.beam_search()) {
      std::vector<int32_t> eos;
      if (ctx_->tokenizer->eos_id() >= 0) eos.push_back(ctx_->tokenizer->eos_id());
      if (ctx_->tokenizer->eot_id() >= 0) eos.push_back(ctx_->tokenizer->eot_id());
      const int64_t max_new = s.max_length - static_cast<int64_t>(s.prompt.size());
      Result<BeamSearch> search = BeamSearch::Create(s.params, std::move(eos), max_new);
      if (!search.ok()) return ReportFailure(id, v1::BAD_REQUEST, search.status().ToString(), Origin{});
      beams = std::make_shared<BeamSearch>(std::move(*search));
    }
    std::unique_ptr<PromptScorer> scorer;
    if (s.params.prompt_logprobs >= 0) scorer = std::make_unique<PromptScorer>(s.prompt, s.params.prompt_logprobs);
    const auto now = Clock::now();
    auto [it, added] = sessions_.emplace(
        id, SamplerSession{std::move(s), std::move(*gen), std::move(amateur), 0, 0, now, now, now, std::move(beams)});
    if (!added) return;
    it->second.prompt_scorer = std::move(scorer);
    // Its prefill is on the ring now (the scheduler sent it): its first round.
    if (!it->second.beams) joiner_.Sent(id, FirstShard(it->second.start.route), now);
  }

  void OnMove(SessionMove& m) {
    auto it = sessions_.find(m.old_id);
    if (it == sessions_.end()) return;
    EndShadow(m.old_id, std::nullopt);  // its shadow ran beside the old route
    SamplerSession s = std::move(it->second);
    EndTimeline(m.old_id);
    sessions_.erase(it);
    joiner_.Forget(m.old_id);
    s.start.session_id = m.new_id;
    s.start.route = std::move(m.route);
    s.last_activity = Clock::now();
    sessions_.emplace(m.new_id, std::move(s));
  }

  // Replays the session's tokens so far through its new route as one prefill;
  // its logits are those of the next position the sampler expects.
  void OnResume(uint64_t id) {
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    SamplerSession& s = it->second;
    s.last_activity = Clock::now();
    ++s.replays;
    joiner_.Forget(id);  // a replay's round says nothing of the next: tracked again from its next step
    if (s.beams && s.beams->step() > 0) return ReplayBeams(id, s);
    const std::vector<int32_t>& tokens = s.generation.tokens();
    v1::Step step;
    step.set_session_id(id);
    step.set_first_position(0);
    step.set_token_count(static_cast<uint32_t>(tokens.size()));
    for (int32_t t : tokens) step.add_token_ids(t);
    for (const v1::RouteHop& hop : s.start.route) *step.add_rest_of_route() = hop;
    if (s.prompt_scorer && !s.prompt_sent) {  // lost during the prefill: score it all again
      s.prompt_scorer->Reset();
      step.set_all_logits(true);
    }
    ctx_->counters.sessions_resumed_total++;
    Status st = sender_.ForwardStep(std::move(step), at::Tensor());
    if (!st.ok()) return Fail(id, v1::UNAVAILABLE, "sampler cannot replay the session: " + st.ToString());
    ScheduleRetry();
  }

  // Logits that came in a burst (the LM head's batch: v1::Step burst_id) are
  // sampled one by one as ever, but the next steps they make are held until
  // the burst's last member is sampled (they are all in the mailbox by
  // then), and leave together, tagged as bursts again, one per next node:
  // the first shard then computes them as one batch. A member that never
  // comes (a failure) holds the others burst_wait_ms at most.
  void OnBurstMember(StepMessage& m) {
    const uint64_t burst = m.step.burst_id();
    const uint32_t size = m.step.burst_size();
    if (burst == 0 || size < 2 || ctx_->config.burst_wait_ms <= 0) {
      OnLogits(m);
      FlushJoining();
      return StreamTokens();
    }
    auto [it, fresh] = held_.try_emplace(burst);
    if (fresh) {
      it->second.size = size;
      it->second.first = Clock::now();
      delayed_send(this, BurstWait(*ctx_), burst_atom::value);
    }
    collecting_ = burst;
    OnLogits(m);
    collecting_ = 0;
    if (++it->second.seen >= it->second.size) ReleaseBursts(/*all_late=*/false);
    FlushJoining();
    StreamTokens();
  }

  // Sends the tokens OnLogits sampled to their clients, in order.
  void StreamTokens() {
    for (auto& [client, env] : tokens_to_stream_) Sent(sender_.Reply(client, std::move(env)));
    tokens_to_stream_.clear();
  }

  // Sends the held steps of every complete burst (and, with `all_late`, of
  // every burst held burst_wait_ms or more).
  void ReleaseBursts(bool all_late) {
    const auto now = Clock::now();
    for (auto it = held_.begin(); it != held_.end();) {
      HeldBurst& b = it->second;
      if (b.seen < b.size && !(all_late && now >= b.first + BurstWait(*ctx_))) {
        ++it;
        continue;
      }
      std::vector<v1::Step> steps = std::move(b.steps);
      it = held_.erase(it);
      for (v1::Step& s : steps) {
        if (sessions_.count(s.session_id())) Join(std::move(s));  // not dropped meanwhile
      }
    }
  }

  // The first shard a step goes to: the hop after the embedding.
  static const std::string& FirstShard(const std::vector<v1::RouteHop>& route) {
    static const std::string none;
    return route.size() > 1 ? route[1].node_id() : route.empty() ? none : route[0].node_id();
  }
  static const std::string& FirstShard(const v1::Step& step) {
    static const std::string none;
    const int n = step.rest_of_route_size();
    return n > 1 ? step.rest_of_route(1).node_id() : n == 1 ? step.rest_of_route(0).node_id() : none;
  }

  // A next step is ready: it joins the steps held for its first shard, which
  // leave together (FlushJoining) once no other session bound there is
  // expected back within burst_wait_ms (scheduling/burst_joiner.h).
  void Join(v1::Step step) {
    const std::string& node = FirstShard(step);
    auto it = joining_.find(node);
    if (it == joining_.end()) it = joining_.emplace(node, Joining{}).first;  // once per first shard: kept
    if (it->second.steps.empty()) it->second.since = Clock::now();
    it->second.steps.push_back(std::move(step));
  }

  // Sends every group of held next steps that need not wait (longer), as one
  // burst each; a group that waits gets a wake-up at its deadline.
  void FlushJoining() {
    const auto now = Clock::now();
    for (auto& [node, j] : joining_) {
      if (j.steps.empty()) continue;
      if (joiner_.Waits(node, j.since, now)) {
        const auto deadline = j.since + joiner_.patience();
        if (j.wake_up < deadline) {
          j.wake_up = deadline;
          delayed_send(this, deadline - now, burst_atom::value);
        }
        continue;
      }
      std::vector<v1::Step> steps;
      for (v1::Step& s : j.steps) {
        if (sessions_.count(s.session_id())) steps.push_back(std::move(s));  // not dropped or moved meanwhile
      }
      j.steps.clear();
      scheduling::TagBursts(steps, NewBurstId(), /*hop=*/1);  // one node: the embedding keeps tags
      std::vector<uint64_t> ids;
      for (const v1::Step& s : steps) {
        ids.push_back(s.session_id());
        joiner_.Sent(s.session_id(), node, now);
      }
      const std::vector<Status> sent = sender_.ForwardSteps(std::move(steps), std::vector<at::Tensor>(ids.size()));
      StreamTokens();  // a session that fails below has its last token first, as before
      for (size_t i = 0; i < ids.size(); ++i) {
        if (!sent[i].ok()) Fail(ids[i], v1::UNAVAILABLE, "sampler cannot forward: " + sent[i].ToString());
      }
    }
    ScheduleRetry();
  }

  void OnLogits(StepMessage& m) {
    if (m.step.shadow_of() != 0) return OnShadowDigest(m);
    const uint64_t id = m.step.session_id();
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;  // dropped meanwhile (cancelled or failed)
    joiner_.Returned(id, Clock::now());
    SamplerSession& s = it->second;
    if (s.shadow && m.step.has_hidden_digest()) {
      const int64_t at = m.step.first_position();
      if (std::optional<bool> same = s.shadow->match.Checked(at, m.step.hidden_digest()); same && !*same) {
        EndShadow(id, at);
      }
    }
    if (s.beams) return OnBeamLogits(it, m);
    if (m.step.all_logits() && !ScorePrompt(s, m)) return;  // a chunk of the prompt's rows, or a failure
    const at::Tensor& logits = m.tensor;
    if (!logits.defined() || logits.dim() != 2 || logits.size(0) != 1 || logits.scalar_type() != at::kFloat ||
        !logits.is_contiguous()) {
      return Fail(id, v1::BAD_TENSOR, "the sampler needs logits [1, vocab] f32");
    }
    const int64_t expected = static_cast<int64_t>(s.start.prompt.size()) + s.sampled - 1;
    if (static_cast<int64_t>(m.step.first_position()) != expected) {
      return Fail(
          id, v1::BAD_REQUEST,
          "logits for position " + std::to_string(m.step.first_position()) + ", expected " + std::to_string(expected));
    }
    const auto now = Clock::now();
    const int64_t compute_begin = SteadyNs();
    TokenEvent ev;
    {
      ComputeTimer timer(ctx_->counters.compute_ns);
      const float* amateur_row = nullptr;
      if (s.amateur) {
        Result<const float*> row = s.amateur->LogitsAfter(s.generation.tokens());
        if (!row.ok()) return Fail(id, v1::INTERNAL, "the amateur model failed: " + row.status().ToString());
        amateur_row = *row;
      }
      ev = s.generation.Next(logits.data_ptr<float>(), logits.size(1), amateur_row);
    }
    RecordTimeline(s, m, s.sampled == 0 ? s.opened : s.last_token, now, compute_begin);
    ++s.sampled;
    ctx_->counters.tokens_generated_total++;
    if (s.sampled == 1) s.first_token = now;
    s.last_token = s.last_activity = now;
    ctx_->counters.steps_total++;
    // Position the next token would take; the cache holds max_length positions.
    const int64_t next_position = static_cast<int64_t>(s.start.prompt.size()) + s.sampled - 1;
    const bool finished = s.generation.finished() || next_position >= s.start.max_length;
    // The next step first: it is on the critical path, the client is not.
    if (!finished) {
      v1::Step next;
      next.set_session_id(id);
      next.set_first_position(static_cast<uint32_t>(next_position));
      next.set_token_count(1);
      next.add_token_ids(ev.id);
      for (const v1::RouteHop& hop : s.start.route) *next.add_rest_of_route() = hop;
      if (collecting_ != 0) {  // leaves with the rest of its burst (OnBurstMember)
        held_[collecting_].steps.push_back(std::move(next));
      } else {
        Join(std::move(next));  // sent by FlushJoining, at once unless others are due
      }
      if (s.shadow) {  // the same step for the spot check's shadow
        v1::Step copy;
        copy.set_session_id(s.shadow->id);
        copy.set_shadow_of(id);
        copy.set_first_position(static_cast<uint32_t>(next_position));
        copy.set_token_count(1);
        copy.add_token_ids(ev.id);
        for (const v1::RouteHop& hop : s.shadow->route) *copy.add_rest_of_route() = hop;
        if (!sender_.ForwardStep(std::move(copy), at::Tensor()).ok()) EndShadow(id, std::nullopt);
      }
    }
    if (s.start.stream) {
      v1::Envelope env = NewEnvelope(s.start.request_id);
      v1::Token* t = env.mutable_token();
      t->set_session_id(id);
      t->set_token_id(ev.id);
      t->set_text(ev.text);
      t->set_job_id(s.start.job_id);
      t->set_index(static_cast<uint32_t>(s.sampled - 1));
      t->set_eos(ev.eos);
      if (ev.logprobs) {
        t->set_logprob(ev.logprobs->logprob);
        t->set_token_bytes(ctx_->tokenizer->TokenBytes(ev.id));
        for (const TokenLogprob& alt : ev.logprobs->top) {
          v1::TokenLogprob* a = t->add_top_logprobs();
          a->set_token_id(alt.id);
          a->set_logprob(alt.logprob);
          a->set_token_bytes(ctx_->tokenizer->TokenBytes(alt.id));
        }
      }
      if (finished) {
        Sent(sender_.Reply(s.start.client, std::move(env)));  // before the Finish
      } else {
        // After the next step has left (FlushJoining, then StreamTokens):
        // the embedding, on this worker, would otherwise wait for the
        // token's encoding and hand-off to the client.
        tokens_to_stream_.emplace_back(s.start.client, std::move(env));
      }
    }
    if (finished) return Finish(it);
    ScheduleRetry();
  }

  // The session's timeline (scheduling/timelines.h): the hop times the step
  // collected, the sampler's own, and the round since `round_start` (the
  // previous token handed on, or the session's start for the prefill).
  void RecordTimeline(const SamplerSession& s, const StepMessage& m, Clock::time_point round_start,
                      Clock::time_point now, int64_t compute_begin) {
    if (!ctx_->timelines || !ctx_->config.hop_timing) return;
    v1::Step own;
    StampHop(m.step, own, *ctx_, v1::STAGE_SAMPLER, m.arrived_ns, compute_begin, SteadyNs());
    scheduling::StepTiming t;
    t.index = static_cast<uint32_t>(s.sampled);  // the answer token this round produced
    t.tokens = s.sampled == 0 ? static_cast<uint32_t>(s.start.prompt.size()) : 1;
    t.total_ms = std::chrono::duration<double, std::milli>(now - round_start).count();
    for (const v1::HopTime& h : own.times()) {
      t.hops.push_back({h.node_id(), static_cast<int>(h.stage()), h.queue_us() / 1000.0, h.compute_us() / 1000.0,
                        h.send_us() / 1000.0});
    }
    ctx_->timelines->Record(m.step.session_id(), std::move(t), now);
  }

  void EndTimeline(uint64_t id) {
    if (ctx_->timelines) ctx_->timelines->End(id, Clock::now());
  }

  // The every-row logits of a prefill chunk: scores the prompt tokens. True
  // when the chunk held the last prompt position: `m` then carries only that
  // row, the first answer token's, and the PromptLogprobs have been sent.
  bool ScorePrompt(SamplerSession& s, StepMessage& m) {
    const uint64_t id = m.step.session_id();
    const at::Tensor& rows = m.tensor;
    if (!s.prompt_scorer) {
      Fail(id, v1::BAD_REQUEST, "every-row logits for a session that asked for no prompt logprobs");
      return false;
    }
    if (!rows.defined() || rows.dim() != 2 || rows.size(0) != m.step.token_count() ||
        rows.scalar_type() != at::kFloat || !rows.is_contiguous()) {
      Fail(id, v1::BAD_TENSOR, "the sampler needs logits [rows, vocab] f32");
      return false;
    }
    const int64_t first = m.step.first_position(), n = rows.size(0);
    {
      ComputeTimer timer(ctx_->counters.compute_ns);
      if (Status st = s.prompt_scorer->Add(first, rows.data_ptr<float>(), n, rows.size(1)); !st.ok()) {
        Fail(id, v1::BAD_REQUEST, st.message());
        return false;
      }
    }
    s.last_activity = Clock::now();
    if (first + n < static_cast<int64_t>(s.start.prompt.size())) return false;  // more chunks to come
    SendPromptLogprobs(s);
    m.tensor = rows.slice(0, n - 1, n).contiguous();
    m.step.set_first_position(static_cast<uint32_t>(first + n - 1));
    m.step.set_token_count(1);
    return true;
  }

  void SendPromptLogprobs(SamplerSession& s) {
    s.prompt_sent = true;
    v1::Envelope env = NewEnvelope(s.start.request_id);
    v1::PromptLogprobs* p = env.mutable_prompt_logprobs();
    p->set_job_id(s.start.job_id);
    const std::vector<int32_t>& prompt = s.prompt_scorer->prompt();
    for (size_t i = 0; i < prompt.size(); ++i) {
      v1::PromptToken* t = p->add_tokens();
      t->set_token_id(prompt[i]);
      t->set_token_bytes(ctx_->tokenizer->TokenBytes(prompt[i]));
      if (i == 0 || i > s.prompt_scorer->scored().size()) continue;
      const TokenLogprobs& scored = s.prompt_scorer->scored()[i - 1];
      t->set_logprob(scored.logprob);
      for (const TokenLogprob& alt : scored.top) {
        v1::TokenLogprob* a = t->add_top_logprobs();
        a->set_token_id(alt.id);
        a->set_logprob(alt.logprob);
        a->set_token_bytes(ctx_->tokenizer->TokenBytes(alt.id));
      }
    }
    Sent(sender_.Reply(s.start.client, std::move(env)));
  }

  // The Finish record of session `id`: `reason`, `generated` answer tokens
  // (the best sequence's, for beams), the head's timings and memory.
  v1::Envelope FinishEnvelope(uint64_t id, const SamplerSession& s, FinishReason reason, int64_t generated) {
    v1::Envelope env = NewEnvelope(s.start.request_id);
    v1::Finish* f = env.mutable_finish();
    f->set_session_id(id);
    f->set_job_id(s.start.job_id);
    f->set_reason(FinishReasonToProto(reason));
    f->set_prompt_tokens(static_cast<uint32_t>(s.start.prompt.size()));
    f->set_generated_tokens(static_cast<uint32_t>(generated));
    f->set_queue_seconds(Seconds(s.start.opened - s.start.submitted));
    f->set_first_token_seconds(Seconds(s.first_token - s.start.opened));
    f->set_total_seconds(Seconds(s.last_token - s.start.submitted));
    f->set_decode_steps(static_cast<uint32_t>(s.sampled - 1));
    f->set_decode_seconds(Seconds(s.last_token - s.first_token));
    f->set_peak_rss_mb(PeakRssMb());
    f->set_replays(s.replays);
    f->set_cached_tokens(static_cast<uint32_t>(s.start.cached));
    return env;
  }

  void Finish(std::map<uint64_t, SamplerSession>::iterator it) {
    SamplerSession& s = it->second;
    const FinishReason reason = s.generation.finished() ? s.generation.finish_reason() : FinishReason::kLength;
    const int64_t generated = s.generation.generated_tokens() - (reason == FinishReason::kEos ? 1 : 0);
    v1::Envelope env = FinishEnvelope(it->first, s, reason, generated);
    // SessionDone before the Finish: a client that has its Finish may submit
    // the next job of its kept session at once, and the scheduler must have
    // freed the session by then (the Finish to the job book goes through the
    // scheduler's mailbox too, after it).
    send(ctx_->scheduler, SessionDone{it->first, s.generation.tokens()});
    Sent(sender_.Reply(s.start.client, std::move(env)));
    EndTimeline(it->first);
    EndShadow(it->first, std::nullopt);
    joiner_.Forget(it->first);
    sessions_.erase(it);
  }

  // ------------------------------------------------------------ spot checks

  // Every shard of the shadow is open: the session's tokens so far go into
  // it as one prefill (as in a replay), whose last position is the one the
  // session's next logits are for; from then on it gets every step.
  void OnShadowStart(ShadowStart& a) {
    auto it = sessions_.find(a.session_id);
    if (it == sessions_.end() || it->second.beams || it->second.shadow) {
      return send(ctx_->scheduler, ShadowEnd{a.session_id, a.shadow_id, 0, std::nullopt});
    }
    SamplerSession& s = it->second;
    const std::vector<int32_t>& tokens = s.generation.tokens();
    v1::Step step;
    step.set_session_id(a.shadow_id);
    step.set_shadow_of(a.session_id);
    step.set_first_position(0);
    step.set_token_count(static_cast<uint32_t>(tokens.size()));
    for (int32_t t : tokens) step.add_token_ids(t);
    for (const v1::RouteHop& hop : a.route) *step.add_rest_of_route() = hop;
    s.shadow = SamplerSession::ShadowRun{a.shadow_id, std::move(a.route),
                                         scheduling::DigestMatch(static_cast<int64_t>(tokens.size()) - 1)};
    if (!sender_.ForwardStep(std::move(step), at::Tensor()).ok()) return EndShadow(a.session_id, std::nullopt);
    ScheduleRetry();
  }

  // The LM head's digest of a shadow's step, to compare with the session's.
  void OnShadowDigest(const StepMessage& m) {
    const uint64_t id = m.step.shadow_of();
    auto it = sessions_.find(id);
    if (it == sessions_.end() || !it->second.shadow || it->second.shadow->id != m.step.session_id() ||
        !m.step.has_hidden_digest()) {
      return;  // ended meanwhile
    }
    const int64_t at = m.step.first_position();
    if (std::optional<bool> same = it->second.shadow->match.Shadow(at, m.step.hidden_digest()); same && !*same) {
      EndShadow(id, at);
    }
  }

  // Tells the scheduler how session `id`'s shadow ended (`mismatch`: the
  // first position whose digests differed) and sends it nothing more.
  void EndShadow(uint64_t id, std::optional<int64_t> mismatch) {
    auto it = sessions_.find(id);
    if (it == sessions_.end() || !it->second.shadow) return;
    const SamplerSession::ShadowRun& r = *it->second.shadow;
    send(ctx_->scheduler, ShadowEnd{id, r.id, r.match.compared(), mismatch});
    it->second.shadow.reset();
  }

  // ------------------------------------------------------------ beam search

  void OnBeamLogits(std::map<uint64_t, SamplerSession>::iterator it, StepMessage& m) {
    const uint64_t id = it->first;
    SamplerSession& s = it->second;
    BeamSearch& search = *s.beams;
    const at::Tensor& logits = m.tensor;
    if (!logits.defined() || logits.dim() != 2 || logits.size(0) != search.rows() ||
        logits.scalar_type() != at::kFloat || !logits.is_contiguous()) {
      return Fail(id, v1::BAD_TENSOR, "beam search needs logits [" + std::to_string(search.rows()) + ", vocab] f32");
    }
    const int64_t prompt = static_cast<int64_t>(s.start.prompt.size());
    const int64_t expected = prompt - 1 + search.step();
    if (static_cast<int64_t>(m.step.first_position()) != expected) {
      return Fail(
          id, v1::BAD_REQUEST,
          "logits for position " + std::to_string(m.step.first_position()) + ", expected " + std::to_string(expected));
    }
    Status st;
    {
      ComputeTimer timer(ctx_->counters.compute_ns);
      st = search.Advance(logits.data_ptr<float>(), logits.size(0), logits.size(1));
    }
    if (!st.ok()) return Fail(id, v1::INTERNAL, "beam search: " + st.ToString());
    const auto now = Clock::now();
    s.sampled = search.step();
    if (s.sampled == 1) s.first_token = now;
    s.last_token = s.last_activity = now;
    ctx_->counters.steps_total++;
    if (search.done()) return FinishBeams(it);
    st = sender_.ForwardStep(BeamStep(id, static_cast<uint32_t>(prompt - 1 + search.step()), search.next_tokens(),
                                      search.parents(), s.start.route),
                             at::Tensor());
    if (!st.ok()) return Fail(id, v1::UNAVAILABLE, "sampler cannot forward: " + st.ToString());
    ScheduleRetry();
  }

  // Every beam's history over the new route (BeamReplaySteps).
  void ReplayBeams(uint64_t id, SamplerSession& s) {
    ctx_->counters.sessions_resumed_total++;
    Status st;
    for (v1::Step& step : BeamReplaySteps(id, s.start.prompt, *s.beams, s.start.route)) {
      if (st = sender_.ForwardStep(std::move(step), at::Tensor()); !st.ok()) break;
    }
    if (!st.ok()) return Fail(id, v1::UNAVAILABLE, "sampler cannot replay the beams: " + st.ToString());
    ScheduleRetry();
  }

  // The returned sequences (one Token each), then Finish; mirrors Finish().
  void FinishBeams(std::map<uint64_t, SamplerSession>::iterator it) {
    SamplerSession& s = it->second;
    const std::vector<BeamHypothesis> sequences = s.beams->Finish();
    for (size_t i = 0; i < sequences.size(); ++i) {
      v1::Envelope env = NewEnvelope(s.start.request_id);
      v1::Token* t = env.mutable_token();
      *t = BeamSequenceToken(sequences[i], static_cast<uint32_t>(i), *ctx_->tokenizer);
      t->set_session_id(it->first);
      t->set_job_id(s.start.job_id);
      Sent(sender_.Reply(s.start.client, std::move(env)));
    }
    const bool eos = !sequences.empty() && sequences[0].eos;
    v1::Envelope env = FinishEnvelope(it->first, s, eos ? FinishReason::kEos : FinishReason::kLength,
                                      sequences.empty() ? 0 : static_cast<int64_t>(sequences[0].tokens.size()));
    send(ctx_->scheduler, SessionDone{it->first});  // before the Finish, as in Finish()
    Sent(sender_.Reply(s.start.client, std::move(env)));
    EndTimeline(it->first);
    joiner_.Forget(it->first);
    sessions_.erase(it);
  }

  void Fail(uint64_t id, v1::ErrorCode code, const std::string& text) {
    EndTimeline(id);
    EndShadow(id, std::nullopt);
    sessions_.erase(id);
    joiner_.Forget(id);
    ReportFailure(id, code, text, Origin{});
  }

  void CheckProgress() {
    const auto now = Clock::now();
    const auto limit = std::chrono::duration<double>(ctx_->config.step_timeout_seconds);
    std::vector<uint64_t> stuck;
    for (const auto& [id, s] : sessions_) {
      if (now - s.last_activity > limit) stuck.push_back(id);
    }
    for (uint64_t id : stuck) {
      Fail(id, v1::TIMEOUT,
           "session " + std::to_string(id) + " made no progress for " +
               std::to_string(ctx_->config.step_timeout_seconds) + " s (a node on its route stopped answering)");
    }
  }

  std::map<uint64_t, SamplerSession> sessions_;
  // Next steps held until their burst is sampled (OnBurstMember), by burst id.
  struct HeldBurst {
    uint32_t size = 0, seen = 0;
    Clock::time_point first;
    std::vector<v1::Step> steps;
  };
  std::map<uint64_t, HeldBurst> held_;
  uint64_t collecting_ = 0;  // the burst whose member OnLogits is sampling now
  // Next steps held for the sessions bound for the same first shard that are
  // due back (scheduling/burst_joiner.h), by first shard: they leave as one
  // (an entry stays once made; empty = nothing held).
  struct Joining {
    Clock::time_point since;    // the first held step's arrival
    Clock::time_point wake_up;  // a burst_atom is due then
    std::vector<v1::Step> steps;
  };
  std::map<std::string, Joining> joining_;
  scheduling::BurstJoiner joiner_;
  // Sampled tokens for their clients, sent once the next steps have left
  // (StreamTokens, at the end of the handler that sampled them).
  std::vector<std::pair<Origin, v1::Envelope>> tokens_to_stream_;
};

}  // namespace

caf::actor SpawnSampler(caf::actor_system& system, std::shared_ptr<NodeContext> ctx) {
  return system.spawn<SamplerActor, caf::lazy_init>(std::move(ctx));
}

}  // namespace troupe::actors

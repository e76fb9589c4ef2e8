// `troupe submit --endpoint EP --prompt TEXT [generation flags] [--json]`:
// sends a job to a cluster's head and streams the answer in exactly the
// output format of `troupe generate` (app/output.h; the summary's figures come
// from the head's Finish record, peak_rss_mb is this client's; after the
// documented keys it adds queue_seconds, total_seconds, replays and
// head_peak_rss_mb from the Finish record, then job_id); beam search prints its sequence
// lines as `generate` does, from the sampler's Token.beam_sequence. With
// --session NAME the job runs in a kept session (--keep opens it; without,
// the job continues it: its prompt, or with --chat its user turn, follows the
// conversation so far); the summary's prompt_tokens is then the whole context
// and cached_tokens what of it the shards' caches held already. Errors
// (CACHE_FULL, NO_ROUTE, a dead cluster...) go to stderr with exit code 1.
// The job endpoint is plain on loopback; elsewhere pass --server-key (and
// --client-key, a key the head's allowlist knows).
//
// Jobs outlive their clients: --job-id ID names the job (submitting the same
// job with the same id again follows the existing job from its first token,
// never runs it twice), --priority P orders it among queued jobs, and
// `--attach JOB` (no prompt) follows a running or ended job from its first
// token (--from-index N: from token N) — after a head restart too. The --json
// summary line adds job_id.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "app/commands.h"
#include "app/output.h"
#include "client/job_client.h"
#include "messages/finish_reason_proto.h"
#include "messages/sampling_params_proto.h"
#include "pipeline/text/prompt.h"

namespace troupe::app {
namespace {

std::atomic<bool> g_stop{false};
void OnStopSignal(int) { g_stop = true; }

struct SubmitFlags {
  std::string endpoint;
  PromptRequest prompt;
  SamplingParams params;
  bool json = false;
  std::string server_key;
  std::string client_key;
  double timeout_s = 120;
  std::string session;
  bool keep = false;
  int64_t max_length = 0;
  uint64_t job_id = 0;
  int32_t priority = 0;
  uint64_t attach = 0;
  uint32_t from_index = 0;
};

void RunSubmit(const SubmitFlags& f) {
  if (f.attach == 0 && f.prompt.prompt.empty()) return Fail("--prompt is required (or --attach JOB)");
  if (Status st = f.params.Validate(); !st.ok()) return Fail(st.ToString());
  client::JobClientOptions options;
  options.endpoint = f.endpoint;
  options.server_key = f.server_key;
  options.client_key_file = f.client_key;
  options.idle_ms = static_cast<int>(f.timeout_s * 1000);
  options.first_reply_ms = std::min(options.idle_ms, 10000);
  auto client = client::JobClient::Connect(options);
  if (!client.ok()) return Fail(client.status().ToString());
  v1::JobSubmit job;
  if (f.prompt.chat) {
    v1::ChatMessage* m = job.add_chat();
    m->set_role("user");
    m->set_content(f.prompt.prompt);
    job.set_system(f.prompt.system);
  } else {
    job.set_prompt(f.prompt.prompt);
  }
  *job.mutable_sampling() = SamplingParamsToProto(f.params);
  job.set_stream(true);
  job.set_session(f.session);
  job.set_keep(f.keep);
  job.set_max_length(static_cast<uint32_t>(f.max_length));
  job.set_job_id(f.job_id);
  job.set_priority(f.priority);
  TokenPrinter printer(f.json);
  std::vector<BeamHypothesis> sequences;  // beam search: the returned sequences, printed at the end
  std::vector<std::string> texts;
  auto on_token = [&](const v1::Token& t) {
    if (t.has_beam_sequence()) {
      const v1::BeamSequence& b = t.beam_sequence();
      sequences.push_back(BeamHypothesis{{b.token_ids().begin(), b.token_ids().end()}, b.score(), 0.0, t.eos()});
      texts.push_back(t.text());
      return;
    }
    TokenEvent ev;
    ev.id = t.token_id();
    ev.text = t.text();
    ev.eos = t.eos();
    if (t.has_logprob()) {
      ev.logprobs.emplace();
      ev.logprobs->logprob = t.logprob();
      for (const v1::TokenLogprob& alt : t.top_logprobs()) ev.logprobs->top.push_back({alt.token_id(), alt.logprob()});
    }
    printer.Token(ev);
  };
  auto on_queued = [](const v1::JobStatus& queued) {
    std::cerr << "troupe: job " << queued.job_id() << " waits for KV cache (" << queued.queue_position()
              << " queued jobs ahead)" << std::endl;
  };
  // Ctrl-C (or SIGTERM) cancels a submitted job; a client killed outright
  // leaves it running (attach to it later). --attach only watches: the
  // signal's default ends this process, not the job.
  if (f.attach == 0) {
    struct sigaction sa {};
    sa.sa_handler = OnStopSignal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
  }
  auto accepted = f.attach != 0 ? (*client)->Follow(f.attach, f.from_index) : (*client)->Submit(job);
  if (!accepted.ok()) return Fail(accepted.status().message());
  std::optional<v1::Finish> finish;
  while (!finish) {
    auto ev = (*client)->Next([] { return g_stop.load(); });
    if (!ev.ok()) return Fail(ev.status().message());
    if (ev->has_token) on_token(ev->token);
    if (ev->has_queued) on_queued(ev->queued);
    if (ev->has_finish) finish = std::move(ev->finish);
  }
  if (!sequences.empty()) PrintBeamSequences(f.json, sequences, texts);
  GenerateStats stats;
  stats.prompt_tokens = finish->prompt_tokens();
  stats.cached_tokens = finish->cached_tokens();
  printer.SetJobId(finish->job_id());
  stats.generated_tokens = finish->generated_tokens();
  stats.decode_steps = finish->decode_steps();
  stats.prefill_seconds = finish->first_token_seconds();
  stats.decode_seconds = finish->decode_seconds();
  stats.finish = FinishReasonFromProto(finish->reason());
  // What only a cluster has: the head's timings, reroutes and memory.
  printer.Done(stats, {{"queue_seconds", finish->queue_seconds()},
                       {"total_seconds", finish->total_seconds()},
                       {"replays", static_cast<double>(finish->replays())},
                       {"head_peak_rss_mb", finish->peak_rss_mb()}});
}

}  // namespace

void RegisterSubmit(CLI::App& app) {
  auto flags = std::make_shared<SubmitFlags>();
  CLI::App* cmd = app.add_subcommand("submit", "Send a job to a cluster and stream the answer");
  cmd->add_option("--endpoint", flags->endpoint, "The head's job endpoint, e.g. tcp://127.0.0.1:5600")->required();
  cmd->add_option("--prompt", flags->prompt.prompt, "Prompt text (required unless --attach)");
  cmd->add_flag("--chat", flags->prompt.chat, "Apply the model's chat template");
  cmd->add_option("--system", flags->prompt.system, "System message (with --chat)");
  AddSamplingFlags(cmd, &flags->params);
  cmd->add_flag("--json", flags->json, "One JSON line per token, then a summary line");
  cmd->add_option("--server-key", flags->server_key, "The head's CURVE public key (Z85), for a non-loopback endpoint");
  cmd->add_option("--client-key", flags->client_key, "This client's node.key (CURVE; default: a fresh key pair)");
  cmd->add_option("--session", flags->session,
                  "Run in kept session NAME: continue it, or open it with --keep (its shards keep the KV cache)");
  cmd->add_flag("--keep", flags->keep, "Open kept session --session NAME with this job");
  cmd->add_option("--max-length", flags->max_length,
                  "With --keep: positions the session reserves (default: the head's kept_session_max_length)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--job-id", flags->job_id,
                  "Name the job (a repeated submit of the same job follows it, never runs it twice)")
      ->check(CLI::Range(uint64_t{1}, ~uint64_t{0}));
  cmd->add_option("--priority", flags->priority, "Among queued jobs, higher goes first (default 0)");
  cmd->add_option("--attach", flags->attach, "Follow job JOB (running or ended) from its first token; no prompt")
      ->check(CLI::Range(uint64_t{1}, ~uint64_t{0}));
  cmd->add_option("--from-index", flags->from_index, "With --attach: start at this token")->needs("--attach");
  cmd->add_option("--timeout", flags->timeout_s, "Give up after this many seconds without an answer")
      ->capture_default_str();
  cmd->callback([flags] { RunSubmit(*flags); });
}

}  // namespace troupe::app

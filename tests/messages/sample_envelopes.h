// One fully populated Envelope per body type, for round-trip tests and the
// fuzz seed corpus. Every body field has a non-default value so that a field
// lost in encoding shows up as a difference.
#pragma once

#include <vector>

#include "messages/envelope_codec.h"
#include "messages/troupe.pb.h"

namespace troupe {
namespace testing_samples {

inline void FillHop(v1::RouteHop* hop, const char* node, v1::Stage stage, uint32_t begin, uint32_t end) {
  hop->set_node_id(node);
  hop->set_endpoint(std::string("tcp://") + node + ":5601");
  hop->set_stage(stage);
  hop->set_layer_begin(begin);
  hop->set_layer_end(end);
}

inline void FillSampling(v1::SamplingParams* s) {
  s->set_temperature(0.7f);
  s->set_top_k(40);
  s->set_top_p(0.9f);
  s->set_min_p(0.05f);
  s->set_top_a(0.2f);
  s->set_repeat_penalty(1.1f);
  s->set_repeat_last_n(-1);
  s->set_min_tokens(2);
  s->set_max_tokens(128);
  s->set_seed(0xDEADBEEFCAFEull);
  s->add_stop("\n\n");
  s->add_stop("User:");
}

inline void FillError(v1::Error* e) {
  e->set_code(v1::CACHE_FULL);
  e->set_text("node shard-1 has 100 free cache tokens, session needs 4096");
  e->set_session_id(42);
  e->set_job_id(9);
  e->set_node_id("shard-1");
}

// One envelope per oneof case, in field-number order.
inline std::vector<v1::Envelope> SampleEnvelopes() {
  std::vector<v1::Envelope> out;
  uint64_t request_id = 100;
  auto next = [&]() -> v1::Envelope& {
    out.push_back(NewEnvelope(++request_id));
    return out.back();
  };
  {
    v1::SessionOpen* m = next().mutable_session_open();
    m->set_session_id(42);
    m->set_max_length(4096);
    m->set_model_fingerprint("sha256:0123456789abcdef");
  }
  {
    v1::SessionOpened* m = next().mutable_session_opened();
    m->set_session_id(42);
    m->set_node_id("shard-1");
  }
  {
    v1::SessionClose* m = next().mutable_session_close();
    m->set_session_id(42);
  }
  {
    v1::Step* m = next().mutable_step();
    m->set_session_id(42);
    m->set_first_position(12);
    m->set_token_count(2);
    FillHop(m->add_rest_of_route(), "shard-1", v1::STAGE_SHARD, 15, 30);
    FillHop(m->add_rest_of_route(), "head-0", v1::STAGE_LM_HEAD, 0, 0);
    m->mutable_rest_of_route(1)->set_encoding(v1::DTYPE_INT8_BLOCK32);  // a slow link
    m->mutable_tensor()->set_dtype(v1::DTYPE_BF16);
    m->mutable_tensor()->add_shape(2);
    m->mutable_tensor()->add_shape(576);
    m->add_token_ids(1);
    m->add_token_ids(49151);
    v1::HopTime* t = m->add_times();  // the stages it passed so far
    t->set_node_id("head-0");
    t->set_stage(v1::STAGE_EMBEDDING);
    t->set_queue_us(12);
    t->set_compute_us(340);
    t->set_send_us(25);
  }
  {
    v1::Token* m = next().mutable_token();
    m->set_session_id(42);
    m->set_token_id(1234);
    m->set_text(" caf\xc3\xa9");
    m->set_job_id(9);
    m->set_index(5);
    m->set_eos(true);
  }
  {
    v1::Finish* m = next().mutable_finish();
    m->set_session_id(42);
    m->set_job_id(9);
    m->set_reason(v1::FINISH_STOP);
    m->set_prompt_tokens(30);
    m->set_generated_tokens(64);
    m->set_queue_seconds(0.25);
    m->set_first_token_seconds(0.5);
    m->set_total_seconds(3.75);
    m->set_replays(1);
    m->set_decode_steps(63);
    m->set_decode_seconds(3.0);
    m->set_peak_rss_mb(512.5);
    m->set_cached_tokens(12);
  }
  FillError(next().mutable_error());
  {
    v1::JobSubmit* m = next().mutable_job_submit();
    m->set_job_id(9);
    m->set_prompt("Why is the sky blue?");
    v1::ChatMessage* c = m->add_chat();
    c->set_role("user");
    c->set_content("Hello");
    c = m->add_chat();
    c->set_role("assistant");
    c->set_content("Hi! How can I help?");
    m->set_system("You are terse.");
    FillSampling(m->mutable_sampling());
    m->set_session("chat-42");
    m->set_keep(true);
    m->set_priority(-1);
    m->set_max_length(1024);
    m->add_prompt_tokens(1);
    m->add_prompt_tokens(9906);
    m->set_stream(true);
  }
  {
    v1::JobCancel* m = next().mutable_job_cancel();
    m->set_job_id(9);
  }
  next().mutable_job_status_query()->set_job_id(9);
  {
    v1::JobAttach* m = next().mutable_job_attach();
    m->set_job_id(9);
    m->set_stream(true);
    m->set_from_index(3);
  }
  {
    v1::JobStatus* m = next().mutable_job_status();
    m->set_job_id(9);
    m->set_state(v1::JOB_QUEUED);
    m->set_queue_position(4);
    m->set_session_id(42);
    m->set_tokens(17);
    m->set_priority(2);
  }
  {
    v1::RegistryAnnounce* m = next().mutable_registry_announce();
    m->set_node_id("shard-1");
    v1::Endpoint* e = m->add_endpoints();
    e->set_name("steps");
    e->set_address("tcp://10.0.0.5:5601");
    e = m->add_endpoints();
    e->set_name("admin");
    e->set_address("http://10.0.0.5:8080");
    m->set_model_fingerprint("sha256:0123456789abcdef");
    v1::LayerRange* r = m->add_layers();
    r->set_begin(15);
    r->set_end(30);
    m->set_public_key("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7");
    m->set_model_name("SmolLM2-135M-Instruct.Q4_1.gguf");
    m->set_layers_digest("0123456789abcdef");
  }
  {
    v1::CoverageQuery* m = next().mutable_coverage_query();
    m->set_node_id("shard-7");
    m->set_model_fingerprint("llama-L30-H576-V49152-T272-1a2b3c");
    m->set_model_name("SmolLM2-135M-Instruct.Q4_1.gguf");
  }
  {
    v1::Coverage* m = next().mutable_coverage();
    m->set_n_layers(4);
    for (uint32_t c : {1u, 1u, 0u, 2u}) m->add_replicas(c);
    m->set_model_fingerprint("llama-L30-H576-V49152-T272-1a2b3c");
    m->set_model_name("SmolLM2-135M-Instruct.Q4_1.gguf");
    v1::LayerRange* s = m->add_spans();
    s->set_begin(0);
    s->set_end(2);
  }
  {
    v1::Heartbeat* m = next().mutable_heartbeat();
    m->set_node_id("shard-1");
    m->set_step_ms(4.25);
    m->set_sessions(3);
    m->set_draining(true);
    v1::LinkTrouble* t = m->add_link_troubles();
    t->set_node_id("shard-2");
    t->set_endpoint("tcp://10.0.0.7:5601");
    t->set_text("node 'shard-2' at tcp://10.0.0.7:5601 refused the CURVE key of 'shard-1'");
  }
  next().mutable_ping()->set_sent_micros(1234567890123);
  {
    v1::NodeDrain* m = next().mutable_node_drain();
    m->set_node_id("shard-1");
    m->set_timeout_seconds(30);
  }
  {
    v1::NodeDrainStatus* m = next().mutable_node_drain_status();
    m->set_node_id("shard-1");
    m->set_moved(2);
    m->set_staying(1);
    m->set_text("node 'shard-1' is draining: 2 job(s) moved to other nodes, 1 finishing on it");
  }
  {
    v1::ConsoleQuery* m = next().mutable_console_query();
    m->set_view("timeline");
    m->set_session_id(0x1234567800000001);
  }
  {
    v1::ConsoleView* m = next().mutable_console_view();
    m->set_json(R"({"n_layers": 30, "replicas": [1, 1, 2]})");
  }
  {
    v1::Pong* m = next().mutable_pong();
    m->set_sent_micros(1234567890123);
    m->set_node_id("shard-1");
    v1::LinkTrouble* t = m->add_link_troubles();
    t->set_node_id("head");
    t->set_endpoint("tcp://10.0.0.1:5601");
    t->set_text("handshake with node 'head' at tcp://10.0.0.1:5601 failed 3 times");
  }
  {
    v1::MetricsSnapshot* m = next().mutable_metrics_snapshot();
    m->set_node_id("shard-1");
    (*m->mutable_counters())["steps_total"] = 1000;
    (*m->mutable_counters())["messages_rejected_total{code=\"BAD_HEADER\"}"] = 2;
    v1::Histogram& h = (*m->mutable_histograms())["step_compute_ms{stage=\"shard\"}"];
    h.add_bounds(1);
    h.add_bounds(5);
    h.add_counts(3);
    h.add_counts(1);
    h.add_counts(0);
    h.set_sum(6.5);
    h.set_count(4);
    (*m->mutable_gauges())["cache_tokens_free"] = 40000.0;
    (*m->mutable_gauges())["load"] = 0.75;
    m->set_route_problem("no shard serves layer 15 of 30");
  }
  next().mutable_metrics_query();
  next().mutable_kept_session_close()->set_name("chat-42");
  next().mutable_kept_session_query();
  {
    v1::KeptSession* k = next().mutable_kept_session_list()->add_sessions();
    k->set_name("chat-42");
    k->set_context_tokens(300);
    k->set_max_length(1024);
    k->set_jobs(3);
    k->set_running_job(9);
    k->set_idle_seconds(0);
    k->set_expires_in_seconds(300);
    k->add_route("shard-0");
  }
  next().mutable_kept_session_closed()->set_name("chat-42");
  {
    v1::PromptLogprobs* p = next().mutable_prompt_logprobs();
    p->set_job_id(9);
    p->add_tokens()->set_token_id(504);
    v1::PromptToken* t = p->add_tokens();
    t->set_token_id(3458);
    t->set_logprob(-2.5f);
    t->set_token_bytes(" capital");
    v1::TokenLogprob* a = t->add_top_logprobs();
    a->set_token_id(282);
    a->set_logprob(-0.5f);
    a->set_token_bytes(" of");
  }
  {  // two sessions' steps of one batch, bound for the same shard
    v1::StepBurst* b = next().mutable_step_burst();
    for (uint64_t session : {42, 43}) {
      v1::Step* m = b->add_steps();
      m->set_session_id(session);
      m->set_first_position(30);
      m->set_token_count(1);
      FillHop(m->mutable_hop(), "shard-1", v1::STAGE_SHARD, 15, 30);
      FillHop(m->add_rest_of_route(), "head-0", v1::STAGE_LM_HEAD, 0, 0);
      m->set_burst_id(0x5eed0001);
      m->set_burst_size(2);
    }
  }
  return out;
}

}  // namespace testing_samples
}  // namespace troupe

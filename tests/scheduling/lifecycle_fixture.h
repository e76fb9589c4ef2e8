// The job life cycle's test fixture: a head over shards a [0, 2) and b
// (and b2) [2, 4), and helpers that name the actions it decides. Shared by
// job_lifecycle_test.cpp, kept_session_lifecycle_test.cpp and
// prefix_reuse_lifecycle_test.cpp.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "scheduling/job_lifecycle.h"

namespace troupe::scheduling::testing {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

inline const Origin kClient{7, "client-7"};
inline const Origin kOther{8, "client-8"};
inline constexpr uint64_t kFirst = 1000;  // sessions are 1001, 1002, ...

// "Reply ToNode ToNode ...": the kinds of `actions` in order.
inline std::string Kinds(const Actions& actions) {
  static const char* kNames[] = {"Reply",         "ToNode",      "SessionStart", "SessionMove",
                                 "SessionResume", "SessionDrop", "Prefill",      "Log"};
  std::string out;
  for (const Action& a : actions) out += (out.empty() ? "" : " ") + std::string(kNames[a.index()]);
  return out;
}

template <class T>
inline std::vector<T> All(const Actions& actions) {
  std::vector<T> out;
  for (const Action& a : actions) {
    if (const T* t = std::get_if<T>(&a)) out.push_back(*t);
  }
  return out;
}

// "open a 1001", "close b 1001": the ToNode actions in order.
inline std::vector<std::string> NodeMessages(const Actions& actions) {
  std::vector<std::string> out;
  for (const ToNode& t : All<ToNode>(actions)) {
    if (t.envelope.has_session_open()) {
      out.push_back("open " + t.node_id + " " + std::to_string(t.envelope.session_open().session_id()));
    } else {
      out.push_back("close " + t.node_id + " " + std::to_string(t.envelope.session_close().session_id()));
    }
  }
  return out;
}

inline v1::Error CacheFull(const std::string& node, uint64_t sid, bool retryable = true) {
  v1::Error e;
  e.set_code(v1::CACHE_FULL);
  e.set_text("no room");
  e.set_node_id(node);
  e.set_session_id(sid);
  e.set_retryable(retryable);
  return e;
}

inline AdmittedJob Prompt(size_t tokens = 3, int32_t max_tokens = 8) {
  AdmittedJob job;
  for (size_t i = 0; i < tokens; ++i) job.prompt.push_back(static_cast<int32_t>(10 + i));
  job.params.max_tokens = max_tokens;
  return job;
}

class JobLifecycleTest : public ::testing::Test {
 protected:
  // Layers [0, 4): a serves [0, 2), b (and, when asked, b2) [2, 4).
  void Make(bool fixed, bool replica = false) {
    LifecycleConfig c;
    c.node_id = "head";
    c.node_endpoint = "tcp://head";
    c.fingerprint = "fp";
    c.n_layers = 4;
    c.max_positions = 64;
    c.first_session_id = kFirst;
    Registry r;
    r.Upsert(ShardEntry{"a", "tcp://a", 0, 2, fixed, t0});
    r.Upsert(ShardEntry{"b", "tcp://b", 2, 4, fixed, t0});
    if (replica) r.Upsert(ShardEntry{"b2", "tcp://b2", 2, 4, fixed, t0});
    lc = std::make_unique<JobLifecycle>(c, std::move(r));
  }

  // A submitted job (first_session + n) whose shards all opened.
  uint64_t Running(uint64_t job_id, const Origin& client = kClient) {
    lc->Submit(job_id, client, 50 + job_id, Prompt(), t0);
    const uint64_t sid = lc->SessionOf(job_id);
    lc->Opened(sid, "a", 0, t0);
    lc->Opened(sid, "b", 0, t0);
    lc->Opened(sid, "b2", 0, t0);
    EXPECT_EQ(lc->StateOf(job_id), JobState::kRunning);
    return sid;
  }

  // A submitted job refused for want of cache at `when`.
  uint64_t Queued(uint64_t job_id, Clock::time_point when) {
    lc->Submit(job_id, kClient, 50 + job_id, Prompt(), when);
    const uint64_t sid = lc->SessionOf(job_id);
    lc->Failed(sid, CacheFull("a", sid), when);
    EXPECT_EQ(lc->StateOf(job_id), JobState::kQueued);
    return sid;
  }

  const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);
  std::unique_ptr<JobLifecycle> lc;
};

}  // namespace troupe::scheduling::testing

// `troupe job status|cancel --endpoint EP JOB`: one job of the head's job
// book (accepted jobs, and ended ones within the retention window).
//   status [--json]: "job J: STATE [queue_position=N] tokens=N priority=P
//     [finish_reason=R | error=CODE: text]"; --json: {"job_id", "state"
//     ("queued", "running", "completed", "aborted"), "queue_position",
//     "tokens", "priority", "finish_reason", "error": {"code", "text"}}.
//   cancel: stops the job (any client's); prints its status after.
// An unknown job (never accepted, or ended before the retention window) is an
// error (UNKNOWN_JOB) with exit code 1. To follow a job's answer:
// `troupe submit --attach JOB`.
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>
#include <string>

#include "app/commands.h"
#include "client/job_client.h"
#include "messages/finish_reason_proto.h"
#include "pipeline/sampling/finish_reason.h"

namespace troupe::app {
namespace {

struct JobFlags {
  HeadFlags head;
  bool json = false;
  uint64_t job_id = 0;
};

std::string StateName(v1::JobState s) {
  switch (s) {
    case v1::JOB_QUEUED: return "queued";
    case v1::JOB_RUNNING: return "running";
    case v1::JOB_COMPLETED: return "completed";
    case v1::JOB_ABORTED: return "aborted";
    default: return "unknown";
  }
}

void Print(const v1::JobStatus& s, bool json) {
  if (json) {
    nlohmann::ordered_json j{{"job_id", s.job_id()},
                             {"state", StateName(s.state())},
                             {"queue_position", s.queue_position()},
                             {"tokens", s.tokens()},
                             {"priority", s.priority()}};
    if (s.state() == v1::JOB_COMPLETED)
      j["finish_reason"] = finish_reason_name(FinishReasonFromProto(s.finish_reason()));
    if (s.state() == v1::JOB_ABORTED) {
      j["error"] = {{"code", v1::ErrorCode_Name(s.failure().code())}, {"text", s.failure().text()}};
    }
    std::cout << j.dump() << std::endl;
    return;
  }
  std::cout << "job " << s.job_id() << ": " << StateName(s.state());
  if (s.state() == v1::JOB_QUEUED) std::cout << " queue_position=" << s.queue_position();
  std::cout << " tokens=" << s.tokens() << " priority=" << s.priority();
  if (s.state() == v1::JOB_COMPLETED) {
    std::cout << " finish_reason=" << finish_reason_name(FinishReasonFromProto(s.finish_reason()));
  }
  if (s.state() == v1::JOB_ABORTED) {
    std::cout << " error=" << v1::ErrorCode_Name(s.failure().code()) << ": " << s.failure().text();
  }
  std::cout << std::endl;
}

void Run(const JobFlags& f, bool cancel) {
  auto client = ConnectToHead(f.head);
  if (!client.ok()) return Fail(client.status().ToString());
  auto status = cancel ? (*client)->CancelJob(f.job_id) : (*client)->JobStatusOf(f.job_id);
  if (!status.ok()) return Fail(status.status().message());
  Print(*status, f.json);
}

void AddFlags(CLI::App* cmd, JobFlags* f) {
  AddHeadFlags(cmd, &f->head);
  cmd->add_flag("--json", f->json, "One JSON object");
  cmd->add_option("job", f->job_id, "The job id")->required();
}

}  // namespace

void RegisterJob(CLI::App& app) {
  auto flags = std::make_shared<JobFlags>();
  CLI::App* cmd = app.add_subcommand("job", "Status or cancel of one job of a cluster");
  cmd->require_subcommand(1);
  CLI::App* status = cmd->add_subcommand("status", "State, queue position, tokens so far, how it ended");
  AddFlags(status, flags.get());
  status->callback([flags] { Run(*flags, false); });
  CLI::App* cancel = cmd->add_subcommand("cancel", "Stop a job; prints its status after");
  AddFlags(cancel, flags.get());
  cancel->callback([flags] { Run(*flags, true); });
}

}  // namespace troupe::app

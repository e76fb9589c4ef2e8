#include "scheduling/actions.h"

#include "messages/envelope_codec.h"

namespace troupe::scheduling {

v1::Envelope JobStatusReply(uint64_t request_id, uint64_t job_id, v1::JobState state, uint64_t session_id,
                            uint32_t queue_position) {
  v1::Envelope env = NewEnvelope(request_id);
  v1::JobStatus* js = env.mutable_job_status();
  js->set_job_id(job_id);
  js->set_state(state);
  js->set_session_id(session_id);
  if (state == v1::JOB_QUEUED) js->set_queue_position(queue_position);
  return env;
}

}  // namespace troupe::scheduling

#include "pipeline/sampling/finish_reason.h"

namespace troupe {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone: return "none";
    case FinishReason::kEos: return "eos";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
  }
  return "none";
}

}  // namespace troupe

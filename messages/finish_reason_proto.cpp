#include "messages/finish_reason_proto.h"

namespace troupe {

v1::FinishReason FinishReasonToProto(FinishReason reason) {
  switch (reason) {
    case FinishReason::kEos: return v1::FINISH_EOS;
    case FinishReason::kStop: return v1::FINISH_STOP;
    case FinishReason::kLength: return v1::FINISH_LENGTH;
    case FinishReason::kNone: break;
  }
  return v1::FINISH_REASON_UNSPECIFIED;
}

FinishReason FinishReasonFromProto(v1::FinishReason reason) {
  switch (reason) {
    case v1::FINISH_EOS: return FinishReason::kEos;
    case v1::FINISH_STOP: return FinishReason::kStop;
    default: return FinishReason::kLength;
  }
}

}  // namespace troupe

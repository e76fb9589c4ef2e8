#include "tests/transport/step_messages.h"

#include <cstring>

namespace troupe::transport::testing {
namespace {

constexpr uint32_t kMagic = 0x50455453;  // "STEP"

uint8_t PayloadByte(uint64_t seq, size_t i) { return static_cast<uint8_t>((seq * 131 + i * 7 + (i >> 8)) & 0xff); }

}  // namespace

Frames MakeStep(uint64_t seq, size_t payload_bytes) {
  char header[16];
  uint32_t size = static_cast<uint32_t>(payload_bytes);
  std::memcpy(header, &kMagic, 4);
  std::memcpy(header + 4, &size, 4);
  std::memcpy(header + 8, &seq, 8);
  Frames frames;
  frames.push_back(CopyFrame(header, sizeof(header)));
  zmq::message_t payload(payload_bytes);
  auto* p = static_cast<uint8_t*>(payload.data());
  for (size_t i = 0; i < payload_bytes; ++i) p[i] = PayloadByte(seq, i);
  frames.push_back(std::move(payload));
  return frames;
}

Result<uint64_t> StepSeq(const Frames& frames) {
  if (frames.size() != 2 || frames[0].size() != 16) return Status::Corrupt("not a step message");
  uint32_t magic;
  uint64_t seq;
  std::memcpy(&magic, frames[0].data(), 4);
  std::memcpy(&seq, static_cast<const char*>(frames[0].data()) + 8, 8);
  if (magic != kMagic) return Status::Corrupt("step header: bad magic");
  return seq;
}

Status CheckStep(const Frames& frames, uint64_t expected_seq, size_t payload_bytes) {
  TROUPE_ASSIGN_OR_RETURN(uint64_t seq, StepSeq(frames));
  if (seq != expected_seq) {
    return Status::Corrupt("expected step " + std::to_string(expected_seq) + ", got " + std::to_string(seq));
  }
  uint32_t size;
  std::memcpy(&size, static_cast<const char*>(frames[0].data()) + 4, 4);
  if (size != payload_bytes || frames[1].size() != payload_bytes) {
    return Status::Corrupt("step " + std::to_string(seq) + ": payload is " + std::to_string(frames[1].size()) +
                           " bytes");
  }
  const auto* p = static_cast<const uint8_t*>(frames[1].data());
  for (size_t i = 0; i < payload_bytes; ++i) {
    if (p[i] != PayloadByte(seq, i)) {
      return Status::Corrupt("step " + std::to_string(seq) + ": payload byte " + std::to_string(i) + " differs");
    }
  }
  return Status::Ok();
}

Frames TextMessage(std::string_view text) {
  Frames frames;
  frames.push_back(CopyFrame(text));
  return frames;
}

std::string MessageText(const Frames& frames) {
  if (frames.size() != 1) return "";
  return std::string(FrameView(frames[0]));
}

}  // namespace troupe::transport::testing

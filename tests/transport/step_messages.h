// Step-shaped test messages: a 16-byte header frame (sequence number and
// payload size, little-endian) and a payload frame whose bytes are a function
// of the sequence number, so a receiver can check order and content. Control
// messages are one text frame ("END", "ACK 10000").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pipeline/status.h"
#include "transport/frames.h"

namespace troupe::transport::testing {

// Bytes of one row of hidden state [1, 576]: f32, bf16, and int8 (+ one fp16
// scale per 32 values).
inline constexpr size_t kRowF32Bytes = 576 * 4;
inline constexpr size_t kRowBf16Bytes = 576 * 2;
inline constexpr size_t kRowInt8Bytes = 576 + 576 / 32 * 2;

Frames MakeStep(uint64_t seq, size_t payload_bytes);
// OK when `frames` is step `expected_seq` with an intact payload of `payload_bytes`.
Status CheckStep(const Frames& frames, uint64_t expected_seq, size_t payload_bytes);
// The sequence number of a step message (Corrupt for other messages).
Result<uint64_t> StepSeq(const Frames& frames);

Frames TextMessage(std::string_view text);
// The text of a one-frame message ("" for anything else).
std::string MessageText(const Frames& frames);

}  // namespace troupe::transport::testing

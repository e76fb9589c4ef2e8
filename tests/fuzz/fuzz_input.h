// How the fuzz targets read their input bytes, and how seeds are written.
// Shared by the fuzz targets, the seed generator and the corpus test.
//
// envelope_fuzz input: one whole message.
//   [u32 LE word][header bytes][tensor frame bytes]
//   word bit 31: a tensor frame follows the header (possibly empty);
//   word bits 0-30: header length, clamped to the bytes present.
//   Inputs shorter than 4 bytes are a lone header frame.
//
// tensor_fuzz input: one tensor description and frame.
//   [u8 dtype][u8 flags][u8 rank][rank x i64 LE dims][frame bytes]
//   flags bit 0: reject non-finite values. Rank is taken as given (up to
//   255) so that bad ranks are exercised; inputs too short for their dims
//   are skipped.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "messages/message_codec.h"
#include "messages/troupe.pb.h"

namespace troupe::fuzz {

inline std::vector<FrameRef> SplitEnvelopeInput(const uint8_t* data, size_t size) {
  if (size < 4) return {FrameRef{data, size, nullptr}};
  uint32_t word;
  std::memcpy(&word, data, 4);
  const size_t rest = size - 4;
  const size_t header = std::min<size_t>(word & 0x7FFFFFFFu, rest);
  std::vector<FrameRef> frames = {FrameRef{data + 4, header, nullptr}};
  if (word >> 31) frames.push_back(FrameRef{data + 4 + header, rest - header, nullptr});
  return frames;
}

inline std::string JoinEnvelopeInput(const std::string& header, const std::string* tensor) {
  const uint32_t word = static_cast<uint32_t>(header.size()) | (tensor ? 0x80000000u : 0u);
  std::string out(reinterpret_cast<const char*>(&word), 4);
  out += header;
  if (tensor) out += *tensor;
  return out;
}

struct TensorInput {
  v1::TensorDesc desc;
  bool reject_non_finite = false;
  const uint8_t* frame = nullptr;
  size_t size = 0;
};

inline std::optional<TensorInput> ParseTensorInput(const uint8_t* data, size_t size) {
  if (size < 3) return std::nullopt;
  TensorInput in;
  in.desc.set_dtype(static_cast<v1::Dtype>(data[0]));
  in.reject_non_finite = data[1] & 1;
  const size_t rank = data[2];
  if (size < 3 + 8 * rank) return std::nullopt;
  for (size_t i = 0; i < rank; ++i) {
    int64_t d;
    std::memcpy(&d, data + 3 + 8 * i, 8);
    in.desc.add_shape(d);
  }
  in.frame = data + 3 + 8 * rank;
  in.size = size - 3 - 8 * rank;
  return in;
}

inline std::string MakeTensorInput(v1::Dtype dtype, bool reject_non_finite, const std::vector<int64_t>& shape,
                                   const std::string& frame) {
  std::string out;
  out += static_cast<char>(dtype);
  out += static_cast<char>(reject_non_finite ? 1 : 0);
  out += static_cast<char>(shape.size());
  for (int64_t d : shape) out.append(reinterpret_cast<const char*>(&d), 8);
  return out + frame;
}

}  // namespace troupe::fuzz

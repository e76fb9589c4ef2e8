// Writes the fuzz seed corpus: valid messages of every body type (some with
// tensor frames of every dtype) and a few near-misses for envelope_fuzz, and
// described tensor frames for tensor_fuzz. Layouts: fuzz_input.h.
//
//   fuzz_corpus_gen tests/fuzz/corpus
// Seeds named valid-* must be accepted (checked by messages_test).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "messages/envelope_codec.h"
#include "messages/message_codec.h"
#include "messages/tensor_encoding.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/messages/sample_envelopes.h"

namespace {

namespace fs = std::filesystem;
using namespace troupe;

void Write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  std::printf("%s (%zu bytes)\n", path.c_str(), bytes.size());
}

std::vector<float> Values(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = std::sin(0.7f * static_cast<float>(i)) * (1.0f + i % 5);
  return x;
}

std::string Bytes(const TensorFrame& f) { return std::string(reinterpret_cast<const char*>(f.data), f.size); }

const v1::Dtype kDtypes[] = {v1::DTYPE_F32, v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_INT8_BLOCK32};

void WriteEnvelopeSeeds(const fs::path& dir) {
  for (v1::Envelope e : testing_samples::SampleEnvelopes()) {
    if (e.has_step()) e.mutable_step()->clear_tensor();
    const std::string header = EncodeMessage(e)->header;
    Write(dir / ("valid-" + std::string(BodyName(e))), fuzz::JoinEnvelopeInput(header, nullptr));
  }
  for (v1::Dtype dtype : kDtypes) {
    v1::Envelope e = testing_samples::SampleEnvelopes()[3];  // a step
    const std::vector<float> x = Values(2 * 48);
    WireResult<OutboundMessage> m = EncodeMessage(e, *EncodeTensorFrame(dtype, {2, 48}, x.data()));
    const std::string tensor = Bytes(*m->tensor);
    Write(dir / ("valid-step-" + DtypeName(dtype)), fuzz::JoinEnvelopeInput(m->header, &tensor));
  }
  // Near misses: wrong version, a non-finite tensor, a short tensor frame.
  v1::Envelope old = testing_samples::SampleEnvelopes()[2];
  old.set_protocol_version(kProtocolVersion + 1);
  Write(dir / "reject-version", fuzz::JoinEnvelopeInput(EncodeEnvelope(old), nullptr));
  std::vector<float> x = Values(8);
  x[5] = std::nanf("");
  WireResult<OutboundMessage> m =
      EncodeMessage(testing_samples::SampleEnvelopes()[3], *EncodeTensorFrame(v1::DTYPE_F32, {8}, x.data()));
  std::string tensor = Bytes(*m->tensor);
  Write(dir / "reject-nan", fuzz::JoinEnvelopeInput(m->header, &tensor));
  tensor.resize(tensor.size() - 3);
  Write(dir / "reject-short-tensor", fuzz::JoinEnvelopeInput(m->header, &tensor));
}

void WriteTensorSeeds(const fs::path& dir) {
  const std::vector<std::vector<int64_t>> shapes = {{3}, {2, 40}, {1, 1, 2, 33}};
  for (v1::Dtype dtype : kDtypes) {
    for (const std::vector<int64_t>& shape : shapes) {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      const std::vector<float> x = Values(static_cast<size_t>(n));
      const std::string frame = Bytes(*EncodeTensorFrame(dtype, shape, x.data()));
      Write(dir / ("valid-" + DtypeName(dtype) + "-rank" + std::to_string(shape.size())),
            fuzz::MakeTensorInput(dtype, true, shape, frame));
    }
    std::vector<float> x = Values(40);
    x[33] = dtype == v1::DTYPE_INT8_BLOCK32 ? 1.0f : -INFINITY;
    std::string frame = Bytes(*EncodeTensorFrame(dtype, {40}, x.data()));
    if (dtype == v1::DTYPE_INT8_BLOCK32) frame[34] = frame[35] = '\xff';  // NaN scale
    Write(dir / ("nonfinite-" + DtypeName(dtype)), fuzz::MakeTensorInput(dtype, false, {40}, frame));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path root(argv[1]);
  fs::create_directories(root / "envelope");
  fs::create_directories(root / "tensor");
  WriteEnvelopeSeeds(root / "envelope");
  WriteTensorSeeds(root / "tensor");
  return 0;
}

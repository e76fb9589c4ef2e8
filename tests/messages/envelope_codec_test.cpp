// Every body type survives encode/decode unchanged; every way a header frame
// can be wrong gives its own error code.
#include "messages/envelope_codec.h"

#include <set>
#include <string>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "tests/messages/sample_envelopes.h"

namespace troupe {
namespace {

using google::protobuf::util::MessageDifferencer;
using testing_samples::SampleEnvelopes;

constexpr size_t kMax = size_t{1} << 20;

WireResult<v1::Envelope> Decode(const std::string& bytes, size_t max = kMax) {
  return DecodeEnvelope(bytes.data(), bytes.size(), max);
}

TEST(EnvelopeCodecTest, SamplesCoverEveryBodyType) {
  std::set<int> covered;
  for (const v1::Envelope& e : SampleEnvelopes()) covered.insert(e.body_case());
  const google::protobuf::OneofDescriptor* body = v1::Envelope::descriptor()->FindOneofByName("body");
  ASSERT_NE(body, nullptr);
  for (int i = 0; i < body->field_count(); ++i) {
    EXPECT_TRUE(covered.count(body->field(i)->number())) << "no sample for " << body->field(i)->name();
  }
  EXPECT_EQ(covered.size(), static_cast<size_t>(body->field_count()));
}

TEST(EnvelopeCodecTest, EveryBodyTypeRoundTrips) {
  for (const v1::Envelope& original : SampleEnvelopes()) {
    SCOPED_TRACE(BodyName(original));
    const std::string bytes = EncodeEnvelope(original);
    WireResult<v1::Envelope> decoded = Decode(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.error().ToString();
    EXPECT_TRUE(MessageDifferencer::Equals(original, *decoded)) << decoded->DebugString();
    EXPECT_EQ(decoded->protocol_version(), kProtocolVersion);
    EXPECT_EQ(decoded->body_case(), original.body_case());
  }
}

TEST(EnvelopeCodecTest, OptionalFieldsKeepPresence) {
  v1::Envelope e = NewEnvelope();
  e.mutable_error()->set_code(v1::BAD_TENSOR);
  e.mutable_error()->set_session_id(0);  // present, though zero
  WireResult<v1::Envelope> decoded = Decode(EncodeEnvelope(e));
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->error().has_session_id());
  EXPECT_FALSE(decoded->error().has_job_id());
}

TEST(EnvelopeCodecTest, BodyNames) {
  v1::Envelope e = NewEnvelope();
  EXPECT_STREQ(BodyName(e), "none");
  e.mutable_step();
  EXPECT_STREQ(BodyName(e), "step");
  e.mutable_metrics_snapshot();
  EXPECT_STREQ(BodyName(e), "metrics_snapshot");
  e.mutable_metrics_query();
  EXPECT_STREQ(BodyName(e), "metrics_query");
}

TEST(EnvelopeCodecTest, OversizedHeaderIsRejectedBeforeParsing) {
  const std::string bytes = EncodeEnvelope(SampleEnvelopes()[0]);
  WireResult<v1::Envelope> r = Decode(bytes, bytes.size() - 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, v1::OVERSIZED);
  EXPECT_TRUE(Decode(bytes, bytes.size()).ok());
}

TEST(EnvelopeCodecTest, GarbageIsBadHeader) {
  for (const std::string& bytes : {std::string("\xff\xff\xff\xff\xff", 5), std::string("hello world"),
                                   std::string("\x0a\x05"
                                               "ab",
                                               4)}) {
    WireResult<v1::Envelope> r = Decode(bytes);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, v1::BAD_HEADER) << r.error().ToString();
  }
}

TEST(EnvelopeCodecTest, TruncatedHeaderIsBadHeader) {
  const std::string bytes = EncodeEnvelope(SampleEnvelopes()[3]);  // step, nested
  int bad = 0;
  for (size_t n = 1; n < bytes.size(); ++n) {
    WireResult<v1::Envelope> r = Decode(bytes.substr(0, n));
    if (!r.ok()) {
      ++bad;
      EXPECT_TRUE(r.error().code == v1::BAD_HEADER || r.error().code == v1::UNKNOWN_TYPE)
          << n << ": " << r.error().ToString();
    }
  }
  EXPECT_GT(bad, static_cast<int>(bytes.size()) / 2);
}

TEST(EnvelopeCodecTest, InvalidUtf8InAStringIsBadHeader) {
  v1::Envelope e = NewEnvelope();
  e.mutable_error()->set_text("ok");
  std::string bytes = EncodeEnvelope(e);
  const size_t at = bytes.find("ok");
  ASSERT_NE(at, std::string::npos);
  bytes[at] = '\xff';
  WireResult<v1::Envelope> r = Decode(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, v1::BAD_HEADER);
}

TEST(EnvelopeCodecTest, WrongOrMissingVersionIsVersionMismatch) {
  for (uint32_t version : {0u, kProtocolVersion + 1, 0xFFFFFFFFu}) {
    v1::Envelope e = SampleEnvelopes()[3];
    e.set_protocol_version(version);
    WireResult<v1::Envelope> r = Decode(EncodeEnvelope(e));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, v1::VERSION_MISMATCH) << version;
    EXPECT_NE(r.error().text.find(std::to_string(version)), std::string::npos) << r.error().text;
  }
}

TEST(EnvelopeCodecTest, MissingBodyIsUnknownType) {
  WireResult<v1::Envelope> r = Decode(EncodeEnvelope(NewEnvelope(5)));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, v1::UNKNOWN_TYPE);
}

TEST(EnvelopeCodecTest, BodyFromANewerSchemaIsUnknownType) {
  // protocol_version = 1, then field 99 (length-delimited, 2 bytes): a body
  // type this build does not know.
  std::string bytes = EncodeEnvelope(NewEnvelope());
  bytes += std::string("\x9a\x06\x02\x08\x01", 5);
  WireResult<v1::Envelope> r = Decode(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, v1::UNKNOWN_TYPE);
}

TEST(EnvelopeCodecTest, EmptyFrameIsVersionMismatch) {
  // Zero bytes parse as an empty Envelope, whose version (0) is checked first.
  WireResult<v1::Envelope> r = DecodeEnvelope(nullptr, 0, kMax);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, v1::VERSION_MISMATCH);
}

}  // namespace
}  // namespace troupe

// SafetensorsFile on synthetic files: F32/F16/BF16 round trips, and every kind
// of damaged or hostile file giving a specific error instead of a crash.
#include "pipeline/format/safetensors_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace troupe {
namespace {

namespace fs = std::filesystem;

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/tmp") + "/troupe_st_XXXXXX";
    if (::mkdtemp(templ.data()) != nullptr) path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string Le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}

// header length + header + data, the header padded with spaces to 8 bytes.
std::string SafetensorsBytes(std::string header, const std::string& data) {
  while (header.size() % 8 != 0) header += ' ';
  return Le64(header.size()) + header + data;
}

template <class T>
std::string Raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.path().empty()) << "mkdtemp failed"; }

  // Writes a file and opens it.
  Result<std::unique_ptr<SafetensorsFile>> OpenBytes(const std::string& bytes) {
    path_ = dir_.File("t.safetensors");
    WriteBytes(path_, bytes);
    return SafetensorsFile::Open(path_);
  }
  // One F32 tensor "w" of `shape`, offsets [begin, end], `data_bytes` bytes of data.
  Result<std::unique_ptr<SafetensorsFile>> OpenOne(const std::string& dtype, const std::string& shape, uint64_t begin,
                                                   uint64_t end, size_t data_bytes) {
    const std::string header = R"({"w":{"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":[)" +
                               std::to_string(begin) + "," + std::to_string(end) + "]}}";
    return OpenBytes(SafetensorsBytes(header, std::string(data_bytes, '\x01')));
  }
  void ExpectError(const Result<std::unique_ptr<SafetensorsFile>>& r, StatusCode code, const std::string& fragment) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), code) << r.status().ToString();
    EXPECT_NE(r.status().message().find(path_), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().ToString();
  }

  TempDir dir_;
  std::string path_;
};

TEST_F(SafetensorsTest, RoundTripsF32F16Bf16) {
  const std::vector<float> a = {0.0f, 1.5f, -2.25f, 3.0f, 1e-3f, -7.0f};  // F32 [2, 3]
  const std::vector<uint16_t> b = {0x3C00, 0xC000, 0x3800, 0x7BFF};       // F16 [4]
  const std::vector<uint16_t> c = {0x3F80, 0xC000, 0x4049, 0x0000};       // BF16 [2, 2]
  const std::string data = Raw(a) + Raw(b) + Raw(c);
  const std::string header = R"({"__metadata__":{"format":"pt"},)"
                             R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                             R"("b":{"dtype":"F16","shape":[4],"data_offsets":[24,32]},)"
                             R"("c":{"dtype":"BF16","shape":[2,2],"data_offsets":[32,40]},)"
                             R"("e":{"dtype":"F32","shape":[0,5],"data_offsets":[40,40]}})";
  auto r = OpenBytes(SafetensorsBytes(header, data));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const SafetensorsFile& f = **r;
  EXPECT_EQ(f.path(), path_);
  EXPECT_EQ(f.names(), (std::vector<std::string>{"a", "b", "c", "e"}));
  EXPECT_EQ(f.Find("__metadata__"), nullptr);
  EXPECT_EQ(f.Find("missing"), nullptr);

  const TensorView* ta = f.Find("a");
  ASSERT_NE(ta, nullptr);
  EXPECT_EQ(ta->name, "a");
  EXPECT_EQ(ta->type, GgmlType::F32);
  EXPECT_EQ(ta->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ta->n_bytes, 24u);
  std::vector<float> got_a(6);
  std::memcpy(got_a.data(), ta->data, 24);
  EXPECT_EQ(got_a, a);

  const TensorView* tb = f.Find("b");
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(tb->type, GgmlType::F16);
  EXPECT_EQ(tb->shape, (std::vector<int64_t>{4}));
  std::vector<uint16_t> got_b(4);
  std::memcpy(got_b.data(), tb->data, 8);
  EXPECT_EQ(got_b, b);

  const TensorView* tc = f.Find("c");
  ASSERT_NE(tc, nullptr);
  EXPECT_EQ(tc->type, GgmlType::BF16);
  EXPECT_EQ(tc->shape, (std::vector<int64_t>{2, 2}));
  std::vector<uint16_t> got_c(4);
  std::memcpy(got_c.data(), tc->data, 8);
  EXPECT_EQ(got_c, c);

  const TensorView* te = f.Find("e");
  ASSERT_NE(te, nullptr);
  EXPECT_EQ(te->n_bytes, 0u);
  EXPECT_EQ(te->numel(), 0);
}

TEST_F(SafetensorsTest, ScalarHasOneElement) {
  auto r = OpenOne("F32", "[]", 0, 4, 4);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->Find("w")->numel(), 1);
}

TEST_F(SafetensorsTest, ViewsOutliveNothingButTheFile) {
  // Views point into the mapping, not into a copy: two Finds agree.
  auto r = OpenOne("F32", "[2]", 0, 8, 8);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->Find("w")->data, (*r)->Find("w")->data);
}

TEST_F(SafetensorsTest, MissingFileIsNotFound) {
  path_ = dir_.File("absent.safetensors");
  ExpectError(SafetensorsFile::Open(path_), StatusCode::kNotFound, "no such file");
}

TEST_F(SafetensorsTest, DirectoryIsRefused) {
  path_ = dir_.path();
  ExpectError(SafetensorsFile::Open(path_), StatusCode::kIoError, "not a regular file");
}

TEST_F(SafetensorsTest, EmptyAndTruncatedFilesAreCorrupt) {
  ExpectError(OpenBytes(""), StatusCode::kCorrupt, "too short");
  ExpectError(OpenBytes("\x10\0\0"), StatusCode::kCorrupt, "too short");
}

TEST_F(SafetensorsTest, HeaderLengthPastEndIsCorrupt) {
  ExpectError(OpenBytes(Le64(100) + "{}"), StatusCode::kCorrupt, "runs past the end");
  ExpectError(OpenBytes(Le64(UINT64_MAX) + "{}"), StatusCode::kCorrupt, "runs past the end");
  ExpectError(OpenBytes(Le64(UINT64_MAX - 3) + "{}"), StatusCode::kCorrupt, "runs past the end");
}

TEST_F(SafetensorsTest, BadJsonIsCorrupt) {
  ExpectError(OpenBytes(SafetensorsBytes("{\"w\": {", "")), StatusCode::kCorrupt, "not valid JSON");
  ExpectError(OpenBytes(Le64(0)), StatusCode::kCorrupt, "not valid JSON");
  ExpectError(OpenBytes(SafetensorsBytes("[1, 2]", "")), StatusCode::kCorrupt, "not a JSON object");
  ExpectError(OpenBytes(SafetensorsBytes("{\"w\": 3}", "")), StatusCode::kCorrupt, "not a JSON object");
}

TEST_F(SafetensorsTest, DeeplyNestedJsonDoesNotCrash) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  ExpectError(OpenBytes(SafetensorsBytes(deep, "")), StatusCode::kCorrupt, "not a JSON object");
  const std::string unclosed = "{\"w\":" + std::string(200000, '[');
  ExpectError(OpenBytes(SafetensorsBytes(unclosed, "")), StatusCode::kCorrupt, "not valid JSON");
}

TEST_F(SafetensorsTest, OffsetsOutOfRangeAreCorrupt) {
  ExpectError(OpenOne("F32", "[2]", 0, 8, 4), StatusCode::kCorrupt, "past the data section");
  ExpectError(OpenOne("F32", "[2]", 8, 16, 8), StatusCode::kCorrupt, "past the data section");
  ExpectError(OpenOne("F32", "[2]", UINT64_MAX - 7, UINT64_MAX, 8), StatusCode::kCorrupt, "past the data section");
  ExpectError(OpenOne("F32", "[0]", 8, 0, 8), StatusCode::kCorrupt, "end before they begin");
}

TEST_F(SafetensorsTest, SizeShapeMismatchIsCorrupt) {
  ExpectError(OpenOne("F32", "[3]", 0, 8, 16), StatusCode::kCorrupt, "needs 12");
  ExpectError(OpenOne("F16", "[2,2]", 0, 16, 16), StatusCode::kCorrupt, "needs 8");
  ExpectError(OpenOne("BF16", "[4]", 0, 4, 8), StatusCode::kCorrupt, "needs 8");
}

TEST_F(SafetensorsTest, ShapeOverflowIsCorrupt) {
  ExpectError(OpenOne("F32", "[4294967296,4294967296]", 0, 8, 8), StatusCode::kCorrupt, "overflows");
  ExpectError(OpenOne("F32", "[4611686018427387904]", 0, 8, 8), StatusCode::kCorrupt, "overflows");
  ExpectError(OpenOne("F32", "[18446744073709551615]", 0, 8, 8), StatusCode::kCorrupt, "overflows");
}

// Found with safetensors_fuzz (tests/fuzz/regressions/): after a zero dimension
// the product stays 0, so a dimension past INT64_MAX passed and became negative
// in the view's shape.
TEST_F(SafetensorsTest, ADimensionPastInt64MaxIsCorruptEvenAfterAZero) {
  ExpectError(OpenOne("F32", "[0,18446744073709551615]", 0, 0, 8), StatusCode::kCorrupt, "overflows");
  ExpectError(OpenOne("F16", "[9223372036854775808,0]", 0, 0, 8), StatusCode::kCorrupt, "overflows");
  auto empty = OpenOne("F32", "[0,9223372036854775807]", 0, 0, 8);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  const TensorView* t = (*empty)->Find("w");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{0, INT64_MAX}));
  EXPECT_EQ(t->n_bytes, 0u);
}

TEST_F(SafetensorsTest, MalformedEntriesAreCorrupt) {
  ExpectError(OpenOne("F32", "[-2]", 0, 8, 8), StatusCode::kCorrupt, "\"shape\"");
  ExpectError(OpenOne("F32", "[2.0]", 0, 8, 8), StatusCode::kCorrupt, "\"shape\"");
  ExpectError(OpenOne("F32", "\"2\"", 0, 8, 8), StatusCode::kCorrupt, "\"shape\"");
  ExpectError(OpenBytes(SafetensorsBytes(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0'))),
              StatusCode::kCorrupt, "\"dtype\"");
  ExpectError(
      OpenBytes(SafetensorsBytes(R"({"w":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0'))),
      StatusCode::kCorrupt, "\"dtype\"");
  ExpectError(
      OpenBytes(SafetensorsBytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", std::string(4, '\0'))),
      StatusCode::kCorrupt, "\"data_offsets\"");
  ExpectError(
      OpenBytes(SafetensorsBytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", std::string(8, '\0'))),
      StatusCode::kCorrupt, "\"data_offsets\"");
  ExpectError(OpenBytes(SafetensorsBytes(R"({"w":{"dtype":"F32","shape":[1]}})", "")), StatusCode::kCorrupt,
              "\"data_offsets\"");
}

TEST_F(SafetensorsTest, UnsupportedDtypesNameTensorAndDtype) {
  ExpectError(OpenOne("I8", "[8]", 0, 8, 8), StatusCode::kUnsupported, "tensor 'w' has dtype I8");
  ExpectError(OpenOne("F8_E4M3", "[8]", 0, 8, 8), StatusCode::kUnsupported, "F8_E4M3");
  ExpectError(OpenOne("I64", "[1]", 0, 8, 8), StatusCode::kUnsupported, "I64");
  ExpectError(OpenOne("F64", "[1]", 0, 8, 8), StatusCode::kUnsupported, "F64");
  ExpectError(OpenOne("float32", "[2]", 0, 8, 8), StatusCode::kUnsupported, "float32");
}

// Every prefix of a valid file, and random single-byte damage to it, either
// opens or fails with a status: never a crash (run under ASan to be sure).
TEST_F(SafetensorsTest, DamagedFilesNeverCrash) {
  const std::vector<float> a = {1, 2, 3, 4};
  const std::vector<uint16_t> b = {0x3C00, 0x4000};
  const std::string good = SafetensorsBytes(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                                            R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[16,20]}})",
                                            Raw(a) + Raw(b));
  ASSERT_TRUE(OpenBytes(good).ok());
  for (size_t n = 0; n < good.size(); ++n) {
    auto r = OpenBytes(good.substr(0, n));
    EXPECT_FALSE(r.ok()) << "prefix of " << n << " bytes opened";
  }
  std::mt19937 rng(1234);
  for (int i = 0; i < 500; ++i) {
    std::string bad = good;
    const size_t at = rng() % bad.size();
    bad[at] = static_cast<char>(rng() & 0xFF);
    auto r = OpenBytes(bad);
    if (r.ok()) {  // damage the checks tolerate: every view must still be readable
      for (const std::string& name : (*r)->names()) {
        const TensorView* v = (*r)->Find(name);
        ASSERT_NE(v, nullptr);
        ASSERT_LE(v->n_bytes, bad.size());
        unsigned sum = 0;
        for (size_t k = 0; k < v->n_bytes; ++k) sum += v->data[k];
        (void)sum;
      }
    } else {
      EXPECT_FALSE(r.status().message().empty());
    }
  }
}

}  // namespace
}  // namespace troupe

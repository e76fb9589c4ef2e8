// HugePageBuffer: copies are exact, 2 MB aligned, owned (move-only), and the
// kernel's answer to the huge-page request can be read back.

#include "pipeline/quant/huge_pages.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/quant/qmatrix.h"
#include "quant_test_util.h"

namespace troupe {
namespace {

TEST(HugePageBufferTest, CopyIsExactAndAligned) {
  constexpr size_t kHuge = HugePageBuffer::kHugePage;
  for (size_t n : {size_t{1}, size_t{4096}, kHuge, kHuge * 3 + 5}) {
    std::vector<uint8_t> src(n);
    std::mt19937 rng(static_cast<uint32_t>(n));
    for (uint8_t& b : src) b = static_cast<uint8_t>(rng());
    Result<HugePageBuffer> buf = HugePageBuffer::CopyOf(src.data(), n);
    ASSERT_TRUE(buf.ok()) << buf.status().ToString();
    EXPECT_EQ(buf->size(), n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buf->data()) % kHuge, 0u);
    EXPECT_EQ(std::memcmp(buf->data(), src.data(), n), 0);
  }
}

TEST(HugePageBufferTest, AllocateZeroesAndRejectsBadArguments) {
  Result<HugePageBuffer> buf = HugePageBuffer::Allocate(3 << 20);
  ASSERT_TRUE(buf.ok());
  const std::vector<uint8_t> zeros(3 << 20, 0);
  EXPECT_EQ(std::memcmp(buf->data(), zeros.data(), zeros.size()), 0);
  EXPECT_EQ(HugePageBuffer::Allocate(0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HugePageBuffer::CopyOf(nullptr, 16).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HugePageBuffer::Allocate(SIZE_MAX).status().code(), StatusCode::kInvalidArgument);
}

TEST(HugePageBufferTest, MovesOwnership) {
  const std::vector<uint8_t> src(1000, 7);
  HugePageBuffer a = HugePageBuffer::CopyOf(src.data(), src.size()).value();
  const uint8_t* p = a.data();
  HugePageBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  HugePageBuffer c = HugePageBuffer::Allocate(10).value();
  c = std::move(b);  // unmaps c's old mapping, takes b's
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.data()[999], 7);
}

// ThpSetting reads the bracketed choice, and "" for a setting the kernel
// does not have.
TEST(HugePageBufferTest, ReadsTheKernelsThpSettings) {
  const std::string enabled = ThpSetting("enabled");
  EXPECT_TRUE(enabled.empty() || enabled == "always" || enabled == "madvise" || enabled == "never") << enabled;
  EXPECT_EQ(ThpSetting("no_such_setting"), "");
}

// Where the kernel hands out transparent huge pages on request (THP
// "always" or "madvise") and compacts memory for a madvised fault (defrag
// "always", "madvise" or "defer+madvise"), a touched 8 MB buffer is partly in
// 2 MB pages. Only a kernel configured otherwise is a reason not to check.
TEST(HugePageBufferTest, ReportsHugePages) {
  if (!ThpGrantsOnRequest()) {
    GTEST_SKIP() << "this kernel does not grant huge pages on request (transparent_hugepage/enabled '"
                 << ThpSetting("enabled") << "', defrag '" << ThpSetting("defrag") << "')";
  }
  HugePageBuffer buf = HugePageBuffer::Allocate(8 << 20).value();
  std::memset(buf.data(), 1, buf.size());
  EXPECT_TRUE(buf.advised());
  const int64_t huge = buf.HugePageBytes();
  RecordProperty("huge_page_bytes", static_cast<int>(huge));
  EXPECT_GT(huge, 0) << "madvise(MADV_HUGEPAGE) on an aligned 8 MB buffer got no huge page";
  EXPECT_LE(huge, int64_t{8} << 20);
}

// A QuantMatrix over a copy multiplies exactly as over the original bytes.
TEST(HugePageBufferTest, MatrixOverCopyGivesTheSameProducts) {
  const int64_t rows = 64, cols = 576;
  const std::vector<uint8_t> w = testing_util::RandomMatrix(GgmlType::Q4_1, rows, cols, 3);
  const std::vector<float> x = testing_util::RandomActivations(2, cols, 4);
  HugePageBuffer copy = HugePageBuffer::CopyOf(w.data(), w.size()).value();
  const QuantMatrix a = QuantMatrix::Create(GgmlType::Q4_1, rows, cols, w.data(), w.size()).value();
  const QuantMatrix b = QuantMatrix::Create(GgmlType::Q4_1, rows, cols, copy.data(), copy.size()).value();
  std::vector<float> ya(2 * rows), yb(2 * rows);
  a.Multiply(x.data(), 2, ya.data(), 1);
  b.Multiply(x.data(), 2, yb.data(), 1);
  EXPECT_EQ(ya, yb);
}

}  // namespace
}  // namespace troupe

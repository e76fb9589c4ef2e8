// KvCache::ZeroAhead: positions past the session's end are zeroed ahead of a
// step (so a page of the cache is first touched by a write), never the
// session's own positions, never past max_length.
#include "pipeline/model/kv_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace troupe {
namespace {

KvCacheShape Shape() {
  KvCacheShape s;
  s.begin_layer = 2;
  s.end_layer = 4;
  s.n_kv_heads = 3;
  s.head_dim = 8;
  return s;
}

// Every row's values at positions [from, to), keys and values, all layers.
std::vector<uint16_t> Rows(const KvCache& c, int64_t from, int64_t to) {
  const KvCacheShape& s = c.shape();
  std::vector<uint16_t> out;
  for (int64_t l = s.begin_layer; l < s.end_layer; ++l) {
    for (int64_t h = 0; h < s.n_kv_heads; ++h) {
      for (const uint16_t* row : {c.keys(l, h), c.values(l, h)}) {
        out.insert(out.end(), row + from * s.head_dim, row + to * s.head_dim);
      }
    }
  }
  return out;
}

// Writes `value` into positions [from, to) of every row, as a step does.
void Fill(KvCache& c, int64_t from, int64_t to, uint16_t value) {
  const KvCacheShape& s = c.shape();
  for (int64_t l = s.begin_layer; l < s.end_layer; ++l) {
    for (int64_t h = 0; h < s.n_kv_heads; ++h) {
      for (uint16_t* row : {c.keys(l, h), c.values(l, h)}) {
        std::fill(row + from * s.head_dim, row + to * s.head_dim, value);
      }
    }
  }
}

int64_t Count(const std::vector<uint16_t>& v, uint16_t value) { return std::count(v.begin(), v.end(), value); }

TEST(KvCacheTest, ZeroAheadZeroesPastTheEndInBlocksAndKeepsThePositions) {
  auto c = KvCache::Create(Shape(), 200).value();
  const int64_t rows = 2 * 3 * 2;  // layers x heads x {keys, values}
  Fill(*c, 0, 200, 0x7777);        // what was there before: not zeros
  c->ZeroAhead(3);                 // a step of 3 from 0: zeros up to 64
  EXPECT_EQ(Count(Rows(*c, 0, 64), 0), 64 * 8 * rows);
  EXPECT_EQ(Count(Rows(*c, 64, 200), 0x7777), 136 * 8 * rows) << "nothing past the block";

  Fill(*c, 0, 70, 0x1234);  // the session's positions, step after step
  c->Commit(70);
  Fill(*c, 70, 200, 0x7777);
  c->ZeroAhead(1);  // 71 rounds up to 128: [70, 128) zeroed, [0, 70) kept
  EXPECT_EQ(Count(Rows(*c, 0, 70), 0x1234), 70 * 8 * rows);
  EXPECT_EQ(Count(Rows(*c, 70, 128), 0), 58 * 8 * rows);
  EXPECT_EQ(Count(Rows(*c, 128, 200), 0x7777), 72 * 8 * rows);

  Fill(*c, 70, 128, 0x5555);  // zeroed once: a second call inside the block writes nothing
  c->ZeroAhead(10);
  EXPECT_EQ(Count(Rows(*c, 70, 128), 0x5555), 58 * 8 * rows);

  c->ZeroAhead(120);  // 190 rounds up to 192; the end of the cache is 200
  EXPECT_EQ(Count(Rows(*c, 128, 192), 0), 64 * 8 * rows);
  EXPECT_EQ(Count(Rows(*c, 192, 200), 0x7777), 8 * 8 * rows);
  c->ZeroAhead(130);  // 256 is past the end: zeroes up to max_length, 200
  EXPECT_EQ(Count(Rows(*c, 192, 200), 0), 8 * 8 * rows);
  // Rows lie end to end: zeros past a row's end would land on the next
  // row's first positions, the session's.
  EXPECT_EQ(Count(Rows(*c, 0, 70), 0x1234), 70 * 8 * rows);
}

// A copied prefix is the session's: zeroing ahead after CopyPrefix keeps it.
TEST(KvCacheTest, ZeroAheadKeepsACopiedPrefix) {
  auto source = KvCache::Create(Shape(), 100).value();
  Fill(*source, 0, 40, 0x4242);
  source->Commit(40);
  auto c = KvCache::Create(Shape(), 100).value();
  ASSERT_TRUE(c->CopyPrefix(*source, 40).ok());
  c->ZeroAhead(1);
  const int64_t rows = 2 * 3 * 2;
  EXPECT_EQ(Count(Rows(*c, 0, 40), 0x4242), 40 * 8 * rows);
  EXPECT_EQ(Count(Rows(*c, 40, 64), 0), 24 * 8 * rows);
}

}  // namespace
}  // namespace troupe

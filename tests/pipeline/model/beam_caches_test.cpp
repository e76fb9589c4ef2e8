// ReorderBeamCaches: after any parent assignment (keep, swap, cycle, fan-out)
// every row's cache holds exactly its parent's old positions, and only rows
// that could not take their parent's own cache were copied.
#include "pipeline/model/beam_caches.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace troupe {
namespace {

const KvCacheShape kShape{2, 4, 2, 3};  // layers [2, 4), 2 kv heads, head_dim 3
constexpr int64_t kMaxLength = 8;

// Fills `length` positions of every layer/head with values naming the beam.
std::unique_ptr<KvCache> Filled(int beam, int64_t length) {
  auto cache = std::move(KvCache::Create(kShape, kMaxLength)).value();
  for (int64_t l = kShape.begin_layer; l < kShape.end_layer; ++l) {
    for (int64_t h = 0; h < kShape.n_kv_heads; ++h) {
      for (int64_t i = 0; i < length * kShape.head_dim; ++i) {
        cache->keys(l, h)[i] = static_cast<uint16_t>(beam * 1000 + l * 100 + h * 10 + i);
        cache->values(l, h)[i] = static_cast<uint16_t>(beam * 1000 + l * 100 + h * 10 + i + 5);
      }
    }
  }
  cache->Commit(length);
  return cache;
}

// True if `cache` holds beam `beam`'s `length` positions.
bool Holds(const KvCache& cache, int beam, int64_t length) {
  if (cache.length() != length) return false;
  for (int64_t l = kShape.begin_layer; l < kShape.end_layer; ++l) {
    for (int64_t h = 0; h < kShape.n_kv_heads; ++h) {
      for (int64_t i = 0; i < length * kShape.head_dim; ++i) {
        if (cache.keys(l, h)[i] != static_cast<uint16_t>(beam * 1000 + l * 100 + h * 10 + i)) return false;
        if (cache.values(l, h)[i] != static_cast<uint16_t>(beam * 1000 + l * 100 + h * 10 + i + 5)) return false;
      }
    }
  }
  return true;
}

void ExpectReorder(const std::vector<int32_t>& parents, int64_t expected_copies) {
  std::vector<std::unique_ptr<KvCache>> caches;
  std::vector<const KvCache*> before;
  for (size_t i = 0; i < parents.size(); ++i) {
    caches.push_back(Filled(static_cast<int>(i), 5));
    before.push_back(caches.back().get());
  }
  Result<int64_t> copies = ReorderBeamCaches(parents, &caches);
  ASSERT_TRUE(copies.ok()) << copies.status().ToString();
  EXPECT_EQ(copies.value(), expected_copies);
  ASSERT_EQ(caches.size(), parents.size());
  for (size_t i = 0; i < parents.size(); ++i) {
    EXPECT_TRUE(Holds(*caches[i], parents[i], 5)) << "row " << i << " parent " << parents[i];
    if (parents[i] == static_cast<int32_t>(i)) {
      EXPECT_EQ(caches[i].get(), before[i]) << "kept its own cache";
    }
  }
}

TEST(ReorderBeamCachesTest, KeepSwapCycleAndFanOut) {
  ExpectReorder({0, 1, 2}, 0);     // every beam keeps its parent: nothing moves
  ExpectReorder({1, 0}, 0);        // a swap moves the caches, copies nothing
  ExpectReorder({1, 2, 0}, 0);     // a cycle too
  ExpectReorder({0, 0, 0}, 2);     // fan-out: two copies of beam 0
  ExpectReorder({2, 2, 0, 3}, 1);  // beam 1 dies; 0 moves to row 2, 2 to row 0, row 1 copies 2
  ExpectReorder({3, 3, 3, 3}, 3);
}

TEST(ReorderBeamCachesTest, FirstStepFillsEmptyCachesFromRowZero) {
  std::vector<std::unique_ptr<KvCache>> caches;
  caches.push_back(Filled(0, 4));
  for (int i = 0; i < 3; ++i) caches.push_back(std::move(KvCache::Create(kShape, kMaxLength)).value());
  Result<int64_t> copies = ReorderBeamCaches({0, 0, 0, 0}, &caches);
  ASSERT_TRUE(copies.ok());
  EXPECT_EQ(copies.value(), 3);
  for (const auto& c : caches) EXPECT_TRUE(Holds(*c, 0, 4));
}

TEST(ReorderBeamCachesTest, RefusesBadParents) {
  std::vector<std::unique_ptr<KvCache>> caches;
  caches.push_back(Filled(0, 2));
  caches.push_back(Filled(1, 2));
  EXPECT_FALSE(ReorderBeamCaches({0}, &caches).ok());
  EXPECT_FALSE(ReorderBeamCaches({0, 2}, &caches).ok());
  EXPECT_FALSE(ReorderBeamCaches({-1, 0}, &caches).ok());
  EXPECT_TRUE(Holds(*caches[1], 1, 2));  // untouched
}

TEST(KvCacheCopyFromTest, RefusesOtherShapesAndOverflow) {
  auto small = std::move(KvCache::Create(kShape, 2)).value();
  auto big = Filled(1, 5);
  EXPECT_FALSE(small->CopyFrom(*big).ok());
  KvCacheShape other = kShape;
  other.head_dim = 4;
  auto odd = std::move(KvCache::Create(other, kMaxLength)).value();
  EXPECT_FALSE(odd->CopyFrom(*big).ok());
}

}  // namespace
}  // namespace troupe

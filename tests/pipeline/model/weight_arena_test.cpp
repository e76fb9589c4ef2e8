// WeightArena: a placed view is an exact, cache-line aligned copy that does
// not overlap any other, and the file mapping it came from still reads the
// same bytes after its pages are handed back; a disabled arena copies nothing;
// copies stop before memory runs short; and where the kernel grants huge
// pages on request, the copies are in them.
#include "pipeline/model/weight_arena.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "pipeline/format/mapped_file.h"

namespace troupe {
namespace {

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> out(n);
  std::mt19937 rng(seed);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

// A temporary file holding `bytes`, mapped as a model file is (TensorView's
// bytes belong to a file mapping, whose pages Place hands back).
class MappedBytes {
 public:
  explicit MappedBytes(const std::vector<uint8_t>& bytes) {
    static int serial = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("weight_arena_test_" + std::to_string(::getpid()) + "_" + std::to_string(serial++) + ".bin"))
                .string();
    std::ofstream out(path_, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.close();
    Result<std::unique_ptr<MappedFile>> file = MappedFile::Open(path_);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    if (file.ok()) file_ = std::move(file).value();
  }
  ~MappedBytes() {
    file_.reset();
    std::remove(path_.c_str());
  }
  const uint8_t* data() const { return file_ ? file_->data() : nullptr; }

 private:
  std::string path_;
  std::unique_ptr<MappedFile> file_;
};

TensorView ViewOf(const uint8_t* data, size_t n, const std::string& name) {
  TensorView v;
  v.name = name;
  v.type = GgmlType::Q8_0;
  v.shape = {1, static_cast<int64_t>(n)};
  v.data = data;
  v.n_bytes = n;
  return v;
}

TEST(WeightArenaTest, PlacedViewsAreExactAlignedAndApart) {
  // Odd sizes at odd offsets of one file (as tensors in a GGUF file), and one
  // larger than a chunk (it gets a chunk of its own).
  const std::vector<size_t> sizes = {1, 4097, 100, WeightArena::kChunkBytes + 3, 70000, 64};
  size_t total = 0;
  std::vector<size_t> offsets;
  for (size_t n : sizes) {
    offsets.push_back(total + 13);
    total += n + 13;
  }
  const std::vector<uint8_t> bytes = RandomBytes(total, 1);
  MappedBytes file(bytes);
  ASSERT_NE(file.data(), nullptr);
  WeightArena arena(true);
  std::vector<TensorView> placed;
  size_t placed_total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const TensorView in = ViewOf(file.data() + offsets[i], sizes[i], "t" + std::to_string(i));
    const TensorView out = arena.Place(in);
    EXPECT_NE(out.data, in.data);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(out.data) % WeightArena::kAlign, 0u);
    EXPECT_EQ(out.name, in.name);
    EXPECT_EQ(out.type, in.type);
    EXPECT_EQ(out.shape, in.shape);
    EXPECT_EQ(out.n_bytes, in.n_bytes);
    placed.push_back(out);
    placed_total += sizes[i];
  }
  EXPECT_EQ(arena.placed_bytes(), placed_total);
  // Checked after every placement: a later copy overwrote no earlier one.
  for (size_t i = 0; i < placed.size(); ++i) {
    EXPECT_EQ(std::memcmp(placed[i].data, bytes.data() + offsets[i], sizes[i]), 0) << "view " << i;
    for (size_t j = i + 1; j < placed.size(); ++j) {
      const bool apart =
          placed[i].data + placed[i].n_bytes <= placed[j].data || placed[j].data + placed[j].n_bytes <= placed[i].data;
      EXPECT_TRUE(apart) << "views " << i << " and " << j << " overlap";
    }
  }
  // The pages handed back fault in again from the file: the mapping still
  // reads what the file holds.
  EXPECT_EQ(std::memcmp(file.data(), bytes.data(), bytes.size()), 0);
}

TEST(WeightArenaTest, ADisabledArenaOrAnEmptyViewCopiesNothing) {
  const std::vector<uint8_t> bytes = RandomBytes(5000, 3);
  const TensorView in = ViewOf(bytes.data(), bytes.size(), "w");
  WeightArena off(false);
  EXPECT_EQ(off.Place(in).data, in.data);
  EXPECT_EQ(off.placed_bytes(), 0u);
  EXPECT_EQ(off.HugePageBytes(), 0);
  WeightArena on(true);
  TensorView empty;
  EXPECT_EQ(on.Place(empty).data, nullptr);
  EXPECT_EQ(on.placed_bytes(), 0u);
}

// The copy is memory the kernel cannot drop (no swap), where the file's
// pages can be: it stops while an eighth of the machine (at least 512 MiB)
// would still be available, and goes on when the figures are unknown.
TEST(WeightArenaTest, CopiesOnlyWhileMemoryStaysAvailable) {
  constexpr uint64_t kGiB = uint64_t{1} << 30, kMiB = uint64_t{1} << 20;
  EXPECT_TRUE(RoomToCopy(kGiB, 4 * kGiB, 16 * kGiB));       // 3 GiB left, 2 needed
  EXPECT_TRUE(RoomToCopy(2 * kGiB, 4 * kGiB, 16 * kGiB));   // exactly the headroom
  EXPECT_FALSE(RoomToCopy(3 * kGiB, 4 * kGiB, 16 * kGiB));  // 1 GiB left
  EXPECT_FALSE(RoomToCopy(5 * kGiB, 4 * kGiB, 16 * kGiB));  // more than is available
  EXPECT_FALSE(RoomToCopy(600 * kMiB, kGiB, 2 * kGiB));     // a small machine keeps 512 MiB
  EXPECT_TRUE(RoomToCopy(400 * kMiB, kGiB, 2 * kGiB));
  EXPECT_TRUE(RoomToCopy(kGiB, 0, 16 * kGiB));  // unknown: copy
  const MemoryNow now = ReadMemoryNow();
  EXPECT_GT(now.total, 0u);
  EXPECT_GT(now.available, 0u);
  EXPECT_LE(now.available, now.total);
}

// What the arena is for: where the kernel hands out transparent huge pages
// on request (as in huge_pages_test), the default arena copies and its
// copies are (at least partly) in 2 MB pages.
TEST(WeightArenaTest, CopiesAreInHugePagesWhereTheKernelGrantsThem) {
  if (!ThpGrantsOnRequest()) {
    GTEST_SKIP() << "this kernel does not grant huge pages on request (transparent_hugepage/enabled '"
                 << ThpSetting("enabled") << "', defrag '" << ThpSetting("defrag") << "')";
  }
  WeightArena arena;
  ASSERT_TRUE(arena.enabled());
  const std::vector<uint8_t> bytes = RandomBytes(8 << 20, 11);
  MappedBytes file(bytes);
  ASSERT_NE(file.data(), nullptr);
  arena.Place(ViewOf(file.data(), bytes.size(), "w"));
  const int64_t huge = arena.HugePageBytes();
  RecordProperty("huge_page_bytes", static_cast<int>(huge));
  EXPECT_GT(huge, 0) << "8 MB placed in a madvised arena got no huge page";
}

}  // namespace
}  // namespace troupe

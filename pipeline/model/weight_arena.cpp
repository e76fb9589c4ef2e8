#include "pipeline/model/weight_arena.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>

#include "pipeline/format/mapped_file.h"

namespace troupe {

bool RoomToCopy(uint64_t bytes, uint64_t available, uint64_t total) {
  if (available == 0 || total == 0) return true;
  const uint64_t headroom = std::max<uint64_t>(total / 8, uint64_t{512} << 20);
  return available >= bytes && available - bytes >= headroom;
}

MemoryNow ReadMemoryNow() {
  MemoryNow now;
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);  // " kB"
    if (key == "MemAvailable:") now.available = kib * 1024;
    if (key == "MemTotal:") now.total = kib * 1024;
  }
  return now;
}

WeightArena::WeightArena() : enabled_(ThpSetting("enabled") != "never") {}

TensorView WeightArena::Place(const TensorView& view) {
  if (!enabled_ || view.data == nullptr || view.n_bytes == 0) return view;
  const size_t need = (view.n_bytes + kAlign - 1) / kAlign * kAlign;
  if (chunks_.empty() || chunks_.back().size() - used_ < need) {
    const size_t bytes = std::max(need, kChunkBytes);
    const MemoryNow memory = ReadMemoryNow();
    if (!RoomToCopy(bytes, memory.available, memory.total)) {
      enabled_ = false;  // the rest stays in the mapping too
      return view;
    }
    Result<HugePageBuffer> chunk = HugePageBuffer::Allocate(bytes);
    if (!chunk.ok()) return view;
    chunks_.push_back(std::move(chunk).value());
    used_ = 0;
  }
  uint8_t* copy = chunks_.back().data() + used_;
  // Slice by slice, each slice's file pages handed back once copied, so a
  // large matrix is never resident twice (a 200 MB LM head would be).
  // Slices end on 4 KB boundaries of the file, so that no page straddles two.
  for (size_t at = 0; at < view.n_bytes;) {
    const uintptr_t end = reinterpret_cast<uintptr_t>(view.data + at) + kSliceBytes;
    const size_t n = std::min(kSliceBytes - end % 4096, view.n_bytes - at);
    std::memcpy(copy + at, view.data + at, n);
    ReleasePages(view.data + at, n);
    at += n;
  }
  used_ += need;
  placed_ += view.n_bytes;
  TensorView placed = view;
  placed.data = copy;
  return placed;
}

int64_t WeightArena::HugePageBytes() const {
  int64_t total = 0;
  for (const HugePageBuffer& chunk : chunks_) {
    const int64_t n = chunk.HugePageBytes();
    if (n < 0) return -1;
    total += n;
  }
  return total;
}

}  // namespace troupe

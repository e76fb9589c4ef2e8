#include "pipeline/quant/huge_pages.h"

#include <sys/mman.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>

namespace troupe {

std::string ThpSetting(const std::string& name) {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/" + name);
  std::string line;
  std::getline(in, line);
  const size_t a = line.find('['), b = line.find(']');
  return a == std::string::npos || b == std::string::npos || b < a ? "" : line.substr(a + 1, b - a - 1);
}

bool ThpGrantsOnRequest() {
  const std::string enabled = ThpSetting("enabled"), defrag = ThpSetting("defrag");
  return (enabled == "always" || enabled == "madvise") &&
         (defrag == "always" || defrag == "madvise" || defrag == "defer+madvise");
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)),
      advised_(std::exchange(other.advised_, false)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    HugePageBuffer old(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
    advised_ = std::exchange(other.advised_, false);
  }
  return *this;
}

HugePageBuffer::~HugePageBuffer() {
  if (data_ != nullptr) munmap(data_, mapped_);
}

Result<HugePageBuffer> HugePageBuffer::Allocate(size_t n) {
  if (n == 0) return Status::InvalidArgument("HugePageBuffer: size must be positive");
  if (n > SIZE_MAX - 2 * kHugePage) {
    return Status::InvalidArgument("HugePageBuffer: size " + std::to_string(n) + " overflows");
  }
  const size_t mapped = (n + kHugePage - 1) / kHugePage * kHugePage;
  // Map one huge page more than needed and trim, so the start is 2 MB aligned.
  const size_t span = mapped + kHugePage;
  void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return Status::IoError("HugePageBuffer: mmap of " + std::to_string(span) +
                           " bytes failed: " + std::strerror(errno));
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) munmap(p, aligned - start);
  const uintptr_t end = aligned + mapped;
  if (start + span > end) munmap(reinterpret_cast<void*>(end), start + span - end);
  HugePageBuffer buf;
  buf.data_ = reinterpret_cast<uint8_t*>(aligned);
  buf.size_ = n;
  buf.mapped_ = mapped;
  buf.advised_ = madvise(buf.data_, mapped, MADV_HUGEPAGE) == 0;
  return buf;
}

Result<HugePageBuffer> HugePageBuffer::CopyOf(const void* src, size_t n) {
  if (src == nullptr) return Status::InvalidArgument("HugePageBuffer: source is null");
  Result<HugePageBuffer> buf = Allocate(n);
  if (!buf.ok()) return buf;
  std::memcpy(buf->data(), src, n);
  return buf;
}

int64_t HugePageBuffer::HugePageBytes() const {
  if (data_ == nullptr) return 0;
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return -1;
  // Mappings are "start-end perms ..." headers followed by "Key: value kB"
  // lines; sum AnonHugePages of the mappings inside [data_, data_ + mapped_)
  // (the kernel may have split or merged ours with a neighbour).
  const uintptr_t lo = reinterpret_cast<uintptr_t>(data_), hi = lo + mapped_;
  char line[512];
  bool inside = false;
  int64_t total = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    uintptr_t a = 0, b = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &a, &b) == 2) {  // mapping header
      inside = a < hi && b > lo;
      continue;
    }
    long long kb = 0;
    if (inside && std::sscanf(line, "AnonHugePages: %lld kB", &kb) == 1) {
      total = (total < 0 ? 0 : total) + kb * 1024;
    }
  }
  std::fclose(f);
  return total;
}

}  // namespace troupe

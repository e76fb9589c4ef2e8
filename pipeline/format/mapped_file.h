// MappedFile: a whole file mapped read-only into memory (mmap, MAP_PRIVATE).
//
// Owns the mapping; unmaps on destruction. Model weights are read straight from
// the mapping, so pages are only brought in when a shard touches its layers.
// ReleasePages hands back pages of a mapping a reader is done with.
// Thread-safety: immutable after Open; safe to read from many threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "pipeline/status.h"

namespace troupe {

class MappedFile {
 public:
  // Fails (IoError, naming the path and errno text) when the file cannot be
  // opened, stat'ed or mapped. An empty file maps to size 0, data nullptr.
  static Result<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Hands back this process's pages wholly inside [p, p + n), which must lie in
// a MappedFile: madvise(MADV_DONTNEED) unmaps them, and the next touch reads
// them from the file again (the mapping is read-only, so it holds no private
// copy and the bytes never change). The page cache keeps them for other
// processes. For a reader done with bytes it will not use again, such as a
// head's digest of layers it does not serve. Best effort: a refusal is
// ignored, the pages then stay resident.
void ReleasePages(const void* p, size_t n);

}  // namespace troupe

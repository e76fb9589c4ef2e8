// Inputs on disk, for the fuzz targets whose parsers open paths rather than
// take bytes: GgufFile and SafetensorsFile map a file, LoadTokenizerJson reads
// a folder, CheckNodeConfigs reads configs by path. Shared by those targets,
// the seed generator and the corpus test.
//
// ScratchFolder: one fresh folder per process (under $TMPDIR, else /tmp),
// removed with its contents when the ScratchFolder is destroyed; each input
// rewrites its files there. The mapping of a file is not watched by
// AddressSanitizer, so the targets check instead that every TensorView they
// get lies inside the file.
//
// Several files in one input (tokenizer_json, node_config): the parts between
// NUL bytes, [part 0] NUL [part 1] NUL ..., at most `max_parts` of them (the
// last keeps any further NULs). JSON and YAML text holds no NUL of its own.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

namespace troupe::fuzz {

class ScratchFolder {
 public:
  ScratchFolder() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/troupe_fuzz_XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("fuzz: cannot make a scratch folder");
      std::abort();
    }
    path_ = pattern;
  }
  ~ScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;

  const std::string& path() const { return path_; }

  // Writes <folder>/<name> (replacing it) and returns its path.
  std::string Write(const std::string& name, const void* data, size_t size) const {
    const std::string p = path_ + "/" + name;
    Remove(name);  // unlink, not truncate: ext4 flushes rewritten files
    std::ofstream out(p, std::ios::binary);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) {
      std::fprintf(stderr, "fuzz: cannot write %s\n", p.c_str());
      std::abort();
    }
    return p;
  }
  std::string Write(const std::string& name, const std::string& text) const {
    return Write(name, text.data(), text.size());
  }
  void Remove(const std::string& name) const {
    std::error_code ec;
    std::filesystem::remove(path_ + "/" + name, ec);
  }

 private:
  std::string path_;
};

inline std::vector<std::string> SplitAtNul(const uint8_t* data, size_t size, size_t max_parts) {
  std::vector<std::string> parts(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0 && parts.size() < max_parts) {
      parts.emplace_back();
    } else {
      parts.back() += static_cast<char>(data[i]);
    }
  }
  return parts;
}

inline std::string JoinAtNul(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += '\0';
    out += parts[i];
  }
  return out;
}

}  // namespace troupe::fuzz

// The seed corpus of a fuzz target as (file name, bytes) pairs, for the
// GoogleTest suites that check every seed does what its name says
// (valid-* accepted, reject-* refused).
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace troupe::fuzz_seeds {

inline std::vector<std::pair<std::string, std::string>> Seeds(const std::string& target) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(TROUPE_SOURCE_DIR) / "tests/fuzz/corpus" / target;
  std::vector<std::pair<std::string, std::string>> seeds;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream file(entry.path(), std::ios::binary);
    seeds.emplace_back(entry.path().filename().string(), std::string(std::istreambuf_iterator<char>(file), {}));
  }
  return seeds;
}

}  // namespace troupe::fuzz_seeds

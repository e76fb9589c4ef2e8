// Runs a libFuzzer target over files without libFuzzer, so that any compiler
// can replay the seed corpus and every past crash as a regression test.
//
//   envelope_fuzz_replay DIR_OR_FILE...
// Runs LLVMFuzzerTestOneInput on every file (directories: every regular file
// in them, sorted; hidden files and README* skipped). Exits 1 when no input
// was found; a failing property aborts the process.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

bool IsInput(const fs::path& p) {
  const std::string name = p.filename().string();
  return fs::is_regular_file(p) && name[0] != '.' && name.rfind("README", 0) != 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    if (fs::is_directory(arg)) {
      for (const auto& entry : fs::directory_iterator(arg)) {
        if (IsInput(entry.path())) inputs.push_back(entry.path());
      }
    } else if (fs::is_regular_file(arg)) {
      inputs.push_back(arg);
    }
  }
  std::sort(inputs.begin(), inputs.end());
  for (const fs::path& p : inputs) {
    std::ifstream file(p, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    // An exact-size heap copy, so that AddressSanitizer sees any overread.
    std::vector<uint8_t> input(bytes.begin(), bytes.end());
    std::fprintf(stderr, "replay %s (%zu bytes)\n", p.c_str(), input.size());
    LLVMFuzzerTestOneInput(input.empty() ? nullptr : input.data(), input.size());
  }
  std::fprintf(stderr, "replayed %zu inputs\n", inputs.size());
  return inputs.empty() ? 1 : 0;
}

// Test helper: writes the tiny random Llama (tests/python/make_tiny_llama.py)
// into a fresh temp dir — once as a Hugging Face folder (hf/) and once as GGUF
// with llama.cpp's q/k permutation (tiny.gguf) — and removes it afterwards.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace troupe::testing {

class TinyLlama {
 public:
  explicit TinyLlama(const std::string& flags = "") {
    std::string templ = (std::filesystem::temp_directory_path() / "troupe-tiny-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) return;
    dir_ = templ;
    const std::string cmd = std::string(TROUPE_SOURCE_DIR "/.venv/bin/python ") + TROUPE_SOURCE_DIR +
                            "/tests/python/make_tiny_llama.py " + dir_ + " " + flags + " >/dev/null 2>&1";
    ok_ = std::system(cmd.c_str()) == 0;
  }
  ~TinyLlama() {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  bool ok() const { return ok_; }
  std::string hf() const { return dir_ + "/hf"; }
  std::string gguf() const { return dir_ + "/tiny.gguf"; }

 private:
  std::string dir_;
  bool ok_ = false;
};

}  // namespace troupe::testing

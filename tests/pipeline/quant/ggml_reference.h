// GgmlReference: llama.cpp's own CPU matmul, for tests. Loads the ggml
// libraries that llama-cpp-python built (libggml-base.so, libggml-cpu.so in
// .venv/lib/python*/site-packages/llama_cpp/lib, or the folder named by
// $TROUPE_GGML_LIB_DIR) with dlopen, and multiplies a weight tensor by fp32
// activation rows with ggml's CPU backend exactly as llama.cpp does: the
// weight goes into the "CPU_REPACK" extra buffer type when llama.cpp would
// put it there (Repacks(): Q4_0 and Q4_K with rows % 8 == 0 on an AVX2 CPU,
// ggml-cpu/repack.cpp ggml_repack_get_optimal_repack_type; llama.cpp's model
// loader puts every weight that type supports there), else into a plain CPU
// buffer, and ggml_mul_mat runs on the CPU backend.
//
// Only opaque handles cross the boundary (no ggml struct layouts), so no ggml
// header is needed: the few prototypes are declared here, as in ggml.h,
// ggml-alloc.h, ggml-backend.h and ggml-cpu.h of llama.cpp b-0.3.36.
//
// Not thread-safe; one instance per test. available() is false (with why())
// when the libraries are not installed: tests then skip.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "pipeline/tensor_view.h"

namespace troupe {
namespace testing_util {

class GgmlReference {
 public:
  GgmlReference() { Load(); }
  ~GgmlReference() {
    if (backend_ != nullptr) backend_free_(backend_);
  }
  GgmlReference(const GgmlReference&) = delete;
  GgmlReference& operator=(const GgmlReference&) = delete;

  bool available() const { return backend_ != nullptr; }
  const std::string& why() const { return why_; }
  bool has_repack() const { return repack_buft_ != nullptr; }

  // Whether llama.cpp on this (AVX2) CPU repacks a weight of this type and
  // row count (ne[1]) for its one-token gemv.
  static bool Repacks(GgmlType type, int64_t rows) {
    return (type == GgmlType::Q4_0 || type == GgmlType::Q4_K) && rows % 8 == 0;
  }

  // ggml's CPU activation quantization, as its CPU backend runs it on this
  // CPU (quantize_row_q8_0 / _q8_1: the x86 SIMD versions; _q8_K): k values
  // of x into ggml blocks at out (block_q8_0: fp16 d + 32 int8; block_q8_1:
  // fp16 d, fp16 s + 32 int8; block_q8_K: fp32 d + 256 int8 + 16 int16 sums).
  enum class Q8 { k0, k1, kK };
  void QuantizeRow(Q8 kind, const float* x, int64_t k, void* out) const {
    (kind == Q8::k0 ? q8_0_ : kind == Q8::k1 ? q8_1_ : q8_k_)(x, out, k);
  }

  // ggml's dequantize_row_<type> (libggml-base): k values of `type` at src
  // into dst. False when ggml has no such function exported.
  bool DequantizeRow(GgmlType type, const void* src, float* dst, int64_t k) const {
    const std::string name = std::string("dequantize_row_") + LowerName(type);
    auto fn = reinterpret_cast<void (*)(const void*, float*, int64_t)>(dlsym(base_, name.c_str()));
    if (fn == nullptr) return false;
    fn(src, dst, k);
    return true;
  }

  // y [n, rows] = x [n, cols] . W^T with W [rows, cols] of `type` in its file
  // encoding. `repack`: place W in CPU_REPACK (only valid when Repacks()).
  // Returns false (with why()) when ggml could not run it.
  bool MatMul(GgmlType type, int64_t rows, int64_t cols, const std::vector<uint8_t>& w, const float* x, int64_t n,
              bool repack, float* y, int threads = 1) {
    if (!available()) return false;
    if (repack && repack_buft_ == nullptr) return Fail("no CPU_REPACK buffer type");
    InitParams wp{16 * 1024 * 1024, nullptr, true};
    void* wctx = init_(wp);
    void* wt = new_tensor_2d_(wctx, static_cast<int>(type), cols, rows);
    void* wbuf = alloc_ctx_tensors_(wctx, repack ? repack_buft_ : cpu_buft_);
    if (wbuf == nullptr) {
      free_(wctx);
      return Fail("could not allocate the weight buffer");
    }
    tensor_set_(wt, w.data(), 0, w.size());
    InitParams gp{64 * 1024 * 1024, nullptr, true};
    void* gctx = init_(gp);
    void* xt = new_tensor_2d_(gctx, 0 /* F32 */, cols, n);
    void* yt = mul_mat_(gctx, wt, xt);
    void* graph = new_graph_(gctx);
    build_forward_expand_(graph, yt);
    void* gbuf = alloc_ctx_tensors_(gctx, cpu_buft_);
    bool ok = gbuf != nullptr;
    if (ok) {
      tensor_set_(xt, x, 0, static_cast<size_t>(n * cols) * sizeof(float));
      set_n_threads_(backend_, threads);
      ok = graph_compute_(backend_, graph) == 0;
      if (ok) tensor_get_(yt, y, 0, static_cast<size_t>(n * rows) * sizeof(float));
    }
    if (gbuf != nullptr) buffer_free_(gbuf);
    buffer_free_(wbuf);
    free_(gctx);
    free_(wctx);
    return ok || Fail("ggml_backend_graph_compute failed");
  }

 private:
  struct InitParams {
    size_t mem_size;
    void* mem_buffer;
    bool no_alloc;
  };

  bool Fail(const std::string& why) {
    why_ = why;
    return false;
  }

  static std::string LowerName(GgmlType type) {
    std::string n = ggml_type_name(type);
    for (char& c : n) {
      if (c >= 'A' && c <= 'Z' && c != 'K') c = static_cast<char>(c - 'A' + 'a');
    }
    return n;
  }

  static std::string LibDir() {
    if (const char* env = std::getenv("TROUPE_GGML_LIB_DIR")) return env;
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path lib = fs::path(TROUPE_SOURCE_DIR) / ".venv" / "lib";
    for (const auto& e : fs::directory_iterator(lib, ec)) {
      const fs::path dir = e.path() / "site-packages" / "llama_cpp" / "lib";
      if (fs::exists(dir / "libggml-cpu.so", ec)) return dir.string();
    }
    return "";
  }

  static void QuietLog(int level, const char* text, void*) {
    if (level == 3 || level == 4) std::fputs(text, stderr);
  }

  template <class F>
  bool Sym(void* lib, const char* name, F* out) {
    *out = reinterpret_cast<F>(dlsym(lib, name));
    return *out != nullptr || Fail(std::string("missing symbol ") + name);
  }

  void Load() {
    const std::string dir = LibDir();
    if (dir.empty()) {
      why_ = "llama_cpp's ggml libraries not found (install llama-cpp-python in .venv or set TROUPE_GGML_LIB_DIR)";
      return;
    }
    void* base = dlopen((dir + "/libggml-base.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
    base_ = base;
    void* cpu = base != nullptr ? dlopen((dir + "/libggml-cpu.so").c_str(), RTLD_NOW | RTLD_GLOBAL) : nullptr;
    if (cpu == nullptr) {
      why_ = std::string("dlopen failed: ") + dlerror();
      return;
    }
    using GetExtra = void** (*)(void*);
    void* (*cpu_reg)() = nullptr;
    void* (*reg_dev_get)(void*, size_t) = nullptr;
    void* (*reg_proc)(void*, const char*) = nullptr;
    const char* (*buft_name)(void*) = nullptr;
    void* (*cpu_buft)() = nullptr;
    void* (*cpu_init)() = nullptr;
    if (!Sym(base, "ggml_init", &init_) || !Sym(base, "ggml_free", &free_) ||
        !Sym(base, "ggml_new_tensor_2d", &new_tensor_2d_) || !Sym(base, "ggml_mul_mat", &mul_mat_) ||
        !Sym(base, "ggml_new_graph", &new_graph_) || !Sym(base, "ggml_build_forward_expand", &build_forward_expand_) ||
        !Sym(base, "ggml_backend_alloc_ctx_tensors_from_buft", &alloc_ctx_tensors_) ||
        !Sym(base, "ggml_backend_tensor_set", &tensor_set_) || !Sym(base, "ggml_backend_tensor_get", &tensor_get_) ||
        !Sym(base, "ggml_backend_buffer_free", &buffer_free_) || !Sym(base, "ggml_backend_free", &backend_free_) ||
        !Sym(base, "ggml_backend_graph_compute", &graph_compute_) ||
        !Sym(base, "ggml_backend_reg_dev_get", &reg_dev_get) ||
        !Sym(base, "ggml_backend_reg_get_proc_address", &reg_proc) ||
        !Sym(base, "ggml_backend_buft_name", &buft_name) || !Sym(base, "ggml_backend_cpu_buffer_type", &cpu_buft) ||
        !Sym(cpu, "ggml_backend_cpu_reg", &cpu_reg) || !Sym(cpu, "ggml_backend_cpu_init", &cpu_init) ||
        !Sym(cpu, "ggml_backend_cpu_set_n_threads", &set_n_threads_) || !Sym(cpu, "quantize_row_q8_0", &q8_0_) ||
        !Sym(cpu, "quantize_row_q8_1", &q8_1_) || !Sym(cpu, "quantize_row_q8_K", &q8_k_)) {
      return;
    }
    // ggml's info lines ("repack: repack tensor ...") would flood the test
    // output: keep warnings and errors (levels 3 and 4) on stderr.
    void (*log_set)(void (*)(int, const char*, void*), void*) = nullptr;
    if (Sym(base, "ggml_log_set", &log_set)) log_set(QuietLog, nullptr);
    cpu_buft_ = cpu_buft();
    void* reg = cpu_reg();
    auto get_extra = reinterpret_cast<GetExtra>(reg_proc(reg, "ggml_backend_dev_get_extra_bufts"));
    if (get_extra != nullptr) {
      for (void** b = get_extra(reg_dev_get(reg, 0)); b != nullptr && *b != nullptr; ++b) {
        if (std::strcmp(buft_name(*b), "CPU_REPACK") == 0) repack_buft_ = *b;
      }
    }
    backend_ = cpu_init();
    if (backend_ == nullptr) why_ = "ggml_backend_cpu_init failed";
  }

  std::string why_;
  void* base_ = nullptr;
  void* backend_ = nullptr;
  void* cpu_buft_ = nullptr;
  void* repack_buft_ = nullptr;
  void* (*init_)(InitParams) = nullptr;
  void (*free_)(void*) = nullptr;
  void* (*new_tensor_2d_)(void*, int, int64_t, int64_t) = nullptr;
  void* (*mul_mat_)(void*, void*, void*) = nullptr;
  void* (*new_graph_)(void*) = nullptr;
  void (*build_forward_expand_)(void*, void*) = nullptr;
  void* (*alloc_ctx_tensors_)(void*, void*) = nullptr;
  void (*tensor_set_)(void*, const void*, size_t, size_t) = nullptr;
  void (*tensor_get_)(const void*, void*, size_t, size_t) = nullptr;
  void (*buffer_free_)(void*) = nullptr;
  void (*backend_free_)(void*) = nullptr;
  int (*graph_compute_)(void*, void*) = nullptr;
  void (*set_n_threads_)(void*, int) = nullptr;
  void (*q8_0_)(const float*, void*, int64_t) = nullptr;
  void (*q8_1_)(const float*, void*, int64_t) = nullptr;
  void (*q8_k_)(const float*, void*, int64_t) = nullptr;
};

}  // namespace testing_util
}  // namespace troupe

// qmatmul_bench: speed of QuantMatrix::Multiply on SmolLM2-135M shapes.
//
// Decode (1 activation row) is memory-bound, so it is reported as weight
// bytes streamed per second, twice: "dram" rotates through enough copies of
// the matrix to defeat the 32 MB L3 (what a real model sees: ~98 MB of
// weights per token), "hot" repeats one copy (cache-resident: the kernel's
// compute ceiling). Several rows (--batch, 64 by default: a prefill; 4-16:
// a ring's decode batch) are compute-bound and reported in GFLOP/s, from
// one cache-resident copy. The last lines run every linear layer of the model once per
// "token", as the engine would (q/k/v and gate/up as shared-input calls).
//
// Every figure is the median of --runs timing runs. Wall-clock times are
// what matters but are inflated when other processes share the cores; for
// one thread the bench also prints CPU-time figures, which are not.
// --huge-pages backs the weights with 2 MB pages (HugePageBuffer), as a
// loader can; file mappings use 4 KB pages. Torch-free.

#include <sys/mman.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/quant/huge_pages.h"
#include "pipeline/quant/kernels.h"
#include "pipeline/quant/qmatrix.h"

namespace troupe {
namespace {

bool g_huge_pages = false;

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Weight memory: 4 KB pages (64-byte aligned, THP refused), or 2 MB pages
// from HugePageBuffer (huge_pages.h, what a loader would use) with
// --huge-pages.
class Buffer {
 public:
  explicit Buffer(size_t bytes) {
    if (g_huge_pages) {
      Result<HugePageBuffer> b = HugePageBuffer::Allocate(bytes);
      if (!b.ok()) {
        std::fprintf(stderr, "%s\n", b.status().ToString().c_str());
        std::exit(1);
      }
      huge_ = std::move(b.value());
      return;
    }
    const size_t alloc = (bytes + 63) / 64 * 64;
    plain_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, alloc)));
    madvise(plain_.get(), alloc, MADV_NOHUGEPAGE);
  }
  uint8_t* get() { return g_huge_pages ? huge_.data() : plain_.get(); }

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, FreeDeleter> plain_;
  HugePageBuffer huge_;
};

// Random weight bytes with small finite fp16 scales at the right offsets.
Buffer RandomWeights(GgmlType type, int64_t rows, int64_t cols, uint32_t seed) {
  const size_t bytes = static_cast<size_t>(rows * ggml_row_bytes(type, cols));
  Buffer buf(bytes);
  std::mt19937 rng(seed);
  uint8_t* w = buf.get();
  for (size_t i = 0; i < bytes; ++i) w[i] = static_cast<uint8_t>(rng());
  const int64_t bb = ggml_block_bytes(type);
  if (type == GgmlType::F16) {  // every value a small finite half
    for (size_t off = 1; off < bytes; off += 2) {
      w[off] = static_cast<uint8_t>(0x20 | (w[off] & 0x83));
    }
  } else {
    for (size_t off = 0; off + bb <= bytes; off += bb) {
      w[off + 1] = 0x20;                              // fp16 d ~ 2^-7
      if (type == GgmlType::Q4_1) w[off + 3] = 0xA4;  // fp16 m ~ -2^-6
    }
  }
  return buf;
}

struct Matrices {
  std::vector<Buffer> bytes;
  std::vector<QuantMatrix> mats;
};

// `copies` independent matrices of the same shape.
Matrices MakeMatrices(GgmlType type, int64_t rows, int64_t cols, int copies) {
  Matrices m;
  for (int i = 0; i < copies; ++i) {
    m.bytes.push_back(RandomWeights(type, rows, cols, 17 + i));
    const size_t n = static_cast<size_t>(rows * ggml_row_bytes(type, cols));
    Result<QuantMatrix> q = QuantMatrix::Create(type, rows, cols, m.bytes.back().get(), n);
    if (!q.ok()) {
      std::fprintf(stderr, "%s\n", q.status().ToString().c_str());
      std::exit(1);
    }
    m.mats.push_back(q.value());
  }
  return m;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Timing {
  double wall;  // seconds per call, median
  double cpu;   // process CPU seconds per call, median
};

// Runs `step` (which does `calls_per_step` calls) for at least min_seconds,
// `runs` times; medians of the per-call times.
template <class Step>
Timing TimeIt(int runs, double min_seconds, int calls_per_step, const Step& step) {
  step();  // warm-up, page-in
  std::vector<double> wall, cpu;
  for (int r = 0; r < runs; ++r) {
    int64_t calls = 0;
    const double w0 = WallSeconds(), c0 = ProcessCpuSeconds();
    double elapsed = 0;
    do {
      step();
      calls += calls_per_step;
      elapsed = WallSeconds() - w0;
    } while (elapsed < min_seconds);
    wall.push_back(elapsed / calls);
    cpu.push_back((ProcessCpuSeconds() - c0) / calls);
  }
  return {Median(wall), Median(cpu)};
}

// The ceiling: a plain read of `mb` MB (same page size as the weights), one
// and two threads, so kernel figures can be read as a fraction of what the
// memory system gives at the moment (it varies with what else runs).
void BenchStreamRead(int runs, double mb) {
  const int64_t words = static_cast<int64_t>(mb * 1e6 / 8);
  Buffer buf(static_cast<size_t>(words) * 8);
  uint64_t* w = reinterpret_cast<uint64_t*>(buf.get());
  for (int64_t i = 0; i < words; ++i) w[i] = static_cast<uint64_t>(i);
  for (int threads : {1, 2}) {
    volatile uint64_t sink = 0;
    const Timing t = TimeIt(runs, 0.2, 1, [&] {
      uint64_t total = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
      for (int64_t i = 0; i < words; ++i) total += w[i];
      sink = sink + total;
    });
    std::printf("stream read (ceiling)  %3d %9.4f %9.2f\n", threads, t.wall * 1e3,
                static_cast<double>(words) * 8 / t.wall / 1e9);
  }
}

struct Shape {
  const char* name;
  GgmlType type;
  int64_t rows, cols;
};

int g_batch = 64;  // activation rows of the compute-bound figure

void PrintHeader() {
  const std::string batch = "n=" + std::to_string(g_batch) + " GFLOP/s";
  std::printf("%-22s %3s %9s %9s %9s %9s %9s %11s\n", "matrix", "thr", "dram ms", "dram GB/s", "(cpu)", "hot ms",
              "hot GB/s", batch.c_str());
}

void BenchShapes(Isa isa, int runs, double dram_mb) {
  const Shape shapes[] = {
      {"Q4_1 [1536,576] up", GgmlType::Q4_1, 1536, 576},
      {"Q4_1 [576,1536] down", GgmlType::Q4_1, 576, 1536},
      {"Q8_0 [49152,576] head", GgmlType::Q8_0, 49152, 576},
      {"Q8_0 [1536,576]", GgmlType::Q8_0, 1536, 576},
      {"F16 [1536,576]", GgmlType::F16, 1536, 576},
      // Gemma 3 270M Q4_K_M: Q5_0 gate/up and q, Q4_K attn_output (repacked
      // order: 640 % 8 == 0), Q6_K ffn_down.
      {"Q5_0 [2048,640] gate", GgmlType::Q5_0, 2048, 640},
      {"Q5_0 [1024,640] q", GgmlType::Q5_0, 1024, 640},
      {"Q4_K [640,1024] o", GgmlType::Q4_K, 640, 1024},
      {"Q4_K [644,1024] vec", GgmlType::Q4_K, 644, 1024},
      {"Q6_K [640,2048] down", GgmlType::Q6_K, 640, 2048},
      {"Q4_0 [2048,640]", GgmlType::Q4_0, 2048, 640},
  };
  for (const Shape& s : shapes) {
    const double bytes = static_cast<double>(s.rows * ggml_row_bytes(s.type, s.cols));
    const int copies = std::max(2, static_cast<int>(dram_mb * 1e6 / bytes + 0.5));
    Matrices m = MakeMatrices(s.type, s.rows, s.cols, copies);
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    std::vector<float> x(g_batch * s.cols);
    for (float& v : x) v = normal(rng);
    std::vector<float> y(g_batch * s.rows);
    for (int threads : {1, 2}) {
      const Timing dram = TimeIt(runs, 0.2, copies, [&] {
        for (const QuantMatrix& q : m.mats) MultiplyWithIsa(q, isa, x.data(), 1, y.data(), threads);
      });
      const Timing hot = TimeIt(runs, 0.1, 16, [&] {
        for (int k = 0; k < 16; ++k) {
          MultiplyWithIsa(m.mats[0], isa, x.data(), 1, y.data(), threads);
        }
      });
      const Timing pre = TimeIt(std::max(3, runs / 2), 0.2, 1,
                                [&] { MultiplyWithIsa(m.mats[0], isa, x.data(), g_batch, y.data(), threads); });
      char cpu_col[32] = "-";
      if (threads == 1) std::snprintf(cpu_col, sizeof cpu_col, "%.2f", bytes / dram.cpu / 1e9);
      std::printf("%-22s %3d %9.4f %9.2f %9s %9.4f %9.2f %11.1f\n", s.name, threads, dram.wall * 1e3,
                  bytes / dram.wall / 1e9, cpu_col, hot.wall * 1e3, bytes / hot.wall / 1e9,
                  2.0 * s.rows * s.cols * g_batch / pre.wall / 1e9);
    }
  }
}

// One decode step of SmolLM2-135M's linear layers: 30 x (q, k, v, o, gate,
// up, down) in Q4_1 plus the tied Q8_0 LM head, each matrix its own memory.
void BenchModel(Isa isa, int runs) {
  struct Layer {
    Matrices q, k, v, o, gate, up, down;
  };
  std::vector<Layer> layers;
  double model_bytes = 0;
  auto make = [&](int64_t rows, int64_t cols) {
    model_bytes += static_cast<double>(rows * ggml_row_bytes(GgmlType::Q4_1, cols));
    return MakeMatrices(GgmlType::Q4_1, rows, cols, 1);
  };
  for (int l = 0; l < 30; ++l) {
    layers.push_back({make(576, 576), make(192, 576), make(192, 576), make(576, 576), make(1536, 576), make(1536, 576),
                      make(576, 1536)});
  }
  Matrices head = MakeMatrices(GgmlType::Q8_0, 49152, 576, 1);
  model_bytes += 49152.0 * ggml_row_bytes(GgmlType::Q8_0, 576);
  std::vector<float> x(1536, 0.5f), y0(49152), y1(1536), y2(1536);
  for (bool shared : {false, true}) {
    for (int threads : {1, 2}) {
      const Timing t = TimeIt(runs, 0.3, 1, [&] {
        for (const Layer& ly : layers) {
          if (shared) {
            const MatmulOutput qkv[] = {
                {&ly.q.mats[0], y0.data()}, {&ly.k.mats[0], y1.data()}, {&ly.v.mats[0], y2.data()}};
            MultiplySharedWithIsa(isa, qkv, 3, x.data(), 1, threads);
          } else {
            MultiplyWithIsa(ly.q.mats[0], isa, x.data(), 1, y0.data(), threads);
            MultiplyWithIsa(ly.k.mats[0], isa, x.data(), 1, y1.data(), threads);
            MultiplyWithIsa(ly.v.mats[0], isa, x.data(), 1, y2.data(), threads);
          }
          MultiplyWithIsa(ly.o.mats[0], isa, x.data(), 1, y0.data(), threads);
          if (shared) {
            const MatmulOutput gu[] = {{&ly.gate.mats[0], y0.data()}, {&ly.up.mats[0], y1.data()}};
            MultiplySharedWithIsa(isa, gu, 2, x.data(), 1, threads);
          } else {
            MultiplyWithIsa(ly.gate.mats[0], isa, x.data(), 1, y0.data(), threads);
            MultiplyWithIsa(ly.up.mats[0], isa, x.data(), 1, y1.data(), threads);
          }
          MultiplyWithIsa(ly.down.mats[0], isa, x.data(), 1, y0.data(), threads);
        }
        MultiplyWithIsa(head.mats[0], isa, x.data(), 1, y0.data(), threads);
      });
      char cpu_note[48] = "";
      if (threads == 1) std::snprintf(cpu_note, sizeof cpu_note, ", cpu %.3f ms", t.cpu * 1e3);
      std::printf(
          "SmolLM2-135M linears (%.0f MB), %s calls, threads=%d: %.3f ms/token "
          "(%.1f GB/s, %.0f tok/s matmul-only%s)\n",
          model_bytes / 1e6, shared ? "shared-input" : "separate", threads, t.wall * 1e3, model_bytes / t.wall / 1e9,
          1.0 / t.wall, cpu_note);
    }
  }
}

}  // namespace
}  // namespace troupe

int main(int argc, char** argv) {
  using namespace troupe;
  CLI::App app{"QuantMatrix::Multiply throughput on SmolLM2-135M shapes"};
  std::string isa_name = IsaName(BestIsa());
  int runs = 7;
  double dram_mb = 256;
  app.add_option("--isa", isa_name, "scalar, avx2 or avx512")->check(CLI::IsMember({"scalar", "avx2", "avx512"}));
  app.add_option("--runs", runs, "timing runs per figure (median reported)");
  app.add_option("--dram-mb", dram_mb, "MB of weight copies rotated for the DRAM figures");
  app.add_flag("--huge-pages", g_huge_pages, "back weights with 2 MB pages (madvise)");
  app.add_option("--batch", g_batch, "activation rows of the compute-bound figure (default 64)")
      ->check(CLI::Range(1, 4096));
  CLI11_PARSE(app, argc, argv);
  Isa isa = BestIsa();
  for (Isa i : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (isa_name == IsaName(i)) isa = i;
  }
  if (!IsaAvailable(isa)) {
    std::fprintf(stderr, "%s kernels are not compiled in\n", isa_name.c_str());
    return 1;
  }
  std::printf("isa=%s runs=%d (medians) pages=%s\n", IsaName(isa), runs, g_huge_pages ? "2MB" : "4KB");
  PrintHeader();
  BenchStreamRead(runs, dram_mb);
  BenchShapes(isa, runs, dram_mb);
  BenchModel(isa, runs);
  return 0;
}

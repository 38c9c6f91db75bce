// SPDX-License-Identifier: Apache-2.0
// CPU benchmark: the machine's ceilings and the ops' CPU kernels against them, in one run.
//
//   fadd ceiling   a register-only loop of independent vector adds at the widest width the CPU
//                  has, on every thread: the most table additions per second any kernel can do
//   fma ceiling    the same with fused multiply-adds: the bound for Polyval and FirFilter
//   copy ceiling   read + write of the same bytes as the kernel, on every thread: the bound for
//                  short tables
//   kernel         Frobulate's CPU kernel (each compiled instruction set), and the scalar
//                  per-element loop it replaced as the baseline; Polyval (degree 16 and 256) and
//                  FirFilter (17 and 63 taps, and at 63 taps each wide instruction set) and
//                  SeparableFilter (float32 images [8, 3, 540, 960] in planes, float32 and uint8
//                  [8, 540, 960, 3] with interleaved channels, k x k taps for k = 3, 9, 31: 2k FMAs
//                  a pixel) against min(fma / FMAs per element, copy of its bytes)
//
// Each case reports its figure against its own ceiling, min(fadd / entries, copy / 8 or 16 B) in
// elements per second (both measured again in every round; the best kernel time against the best
// ceilings of the rounds: on a shared machine a neighbour only ever slows a measurement), and
// against the baseline. Threads are set to denormal flush as TensorFlow's
// CPU threads are. Prints a table; --json FILE writes the figures.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "constmem/cpu_elementwise.hpp"
#include "constmem/cpu_isa.hpp"
#include "fir_filter/fir_filter_cpu.h"
#include "frobulate/frobulate_cpu.h"
#include "frobulate/frobulate_functor.h"
#include "polyval/polyval_cpu.h"
#include "separable_filter/separable_filter_cpu.h"

#if CONSTMEM_CPU_X86
#include <xmmintrin.h>
#endif

namespace {

using constmem::cpu::Isa;
using Clock = std::chrono::steady_clock;

void FlushDenormals() {
#if CONSTMEM_CPU_X86
  _mm_setcsr(_mm_getcsr() | 0x8040);  // FTZ and DAZ, as TensorFlow's ScopedFlushDenormal
#endif
}

// Runs work(thread_index) on `threads` threads and returns the wall time in seconds.
double RunOnThreads(int threads, const std::function<void(int)>& work) {
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&work, t] {
      FlushDenormals();
      work(t);
    });
  }
  for (auto& thread : pool) thread.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double MedianTime(int repeats, int threads, const std::function<void(int)>& work) {
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) times.push_back(RunOnThreads(threads, work));
  return Median(times);
}

// The operands of the ceiling loops, read through volatile so that the compiler cannot fold the
// loops (with a known step, it proves most chains constant: k + 1e-7f == k for k >= 2).
volatile float g_ceiling_step = 1e-7f;
volatile float g_ceiling_scale = 0.999999f;

// Every lane of every chain feeds the result: were only some lanes used, the compiler could pack
// the live lanes of several chains into one register and time fewer, latency-bound adds.
template <class V, int kAcc>
__attribute__((always_inline)) inline float SumOfAllLanes(const V (&acc)[kAcc]) {
  float sum = 0;
  for (int k = 0; k < kAcc; ++k) {
    for (int lane = 0; lane < static_cast<int>(sizeof(V) / sizeof(float)); ++lane) {
      sum += acc[k][lane];
    }
  }
  return sum;
}

// Independent adds, kAcc chains of vectors, nothing read from memory.
template <int kBytes, int kAcc>
__attribute__((always_inline)) inline float AddLoop(std::int64_t iterations) {
  using V = typename constmem::cpu::Vector<float, kBytes>::type;
  V acc[kAcc];
  for (int k = 0; k < kAcc; ++k) acc[k] = V{} + static_cast<float>(k);
  const V step = V{} + g_ceiling_step;
  for (std::int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 64
    for (int k = 0; k < kAcc; ++k) acc[k] += step;
  }
  return SumOfAllLanes<V, kAcc>(acc);
}

float AddLoopPortable(std::int64_t n) { return AddLoop<16, 8>(n); }
#if CONSTMEM_CPU_X86
CONSTMEM_TARGET_AVX2 float AddLoopAvx2(std::int64_t n) { return AddLoop<32, 12>(n); }
CONSTMEM_TARGET_AVX512 float AddLoopAvx512(std::int64_t n) { return AddLoop<64, 24>(n); }
#endif

// Independent fused multiply-adds, kAcc chains of vectors, nothing read from memory.
template <int kBytes, int kAcc>
__attribute__((always_inline)) inline float FmaLoop(std::int64_t iterations) {
  using V = typename constmem::cpu::Vector<float, kBytes>::type;
  V acc[kAcc];
  for (int k = 0; k < kAcc; ++k) acc[k] = V{} + static_cast<float>(k);
  const V scale = V{} + g_ceiling_scale, step = V{} + g_ceiling_step;
  for (std::int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 64
    for (int k = 0; k < kAcc; ++k) constmem::cpu::Fma(acc[k], acc[k], scale, step);
  }
  return SumOfAllLanes<V, kAcc>(acc);
}

#if CONSTMEM_CPU_X86
CONSTMEM_TARGET_AVX2 __attribute__((flatten)) float FmaLoopAvx2(std::int64_t n) {
  return FmaLoop<32, 12>(n);
}
CONSTMEM_TARGET_AVX512 __attribute__((flatten)) float FmaLoopAvx512(std::int64_t n) {
  return FmaLoop<64, 24>(n);
}
#endif

// Float FMAs per second on every thread at the widest width with hardware FMA (none on a CPU
// without AVX2: the portable kernels' std::fma is then a library call, and the figure is 0).
double FmaCeiling(int threads, Isa isa, int repeats = 5) {
  const std::int64_t iterations = 10'000'000;
  float (*loop)(std::int64_t) = nullptr;
  int lanes = 0;
#if CONSTMEM_CPU_X86
  if (isa == Isa::kAvx512) loop = FmaLoopAvx512, lanes = 16 * 24;
  if (isa == Isa::kAvx2) loop = FmaLoopAvx2, lanes = 8 * 12;
#endif
  if (loop == nullptr) return 0;
  std::vector<float> sink(threads);
  const double seconds =
      MedianTime(repeats, threads, [&](int t) { sink[t] = loop(iterations + t); });
  if (sink[0] == 12345.f) std::printf(" ");
  return static_cast<double>(lanes) * iterations * threads / seconds;
}

// Float adds per second on every thread at the widest width.
double FaddCeiling(int threads, Isa isa, int repeats = 5) {
  const std::int64_t iterations = 10'000'000;
  int lanes = 4 * 8;
  float (*loop)(std::int64_t) = AddLoopPortable;
#if CONSTMEM_CPU_X86
  if (isa == Isa::kAvx512) loop = AddLoopAvx512, lanes = 16 * 24;
  if (isa == Isa::kAvx2) loop = AddLoopAvx2, lanes = 8 * 12;
#endif
  std::vector<float> sink(threads);
  const double seconds =
      MedianTime(repeats, threads, [&](int t) { sink[t] = loop(iterations + t); });
  if (sink[0] == 12345.f) std::printf(" ");
  return static_cast<double>(lanes) * iterations * threads / seconds;
}

// 64-byte aligned, as TensorFlow's CPU allocator hands out tensors.
template <class T>
struct AlignedBuffer {
  explicit AlignedBuffer(std::size_t n)
      : data(static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64))) {}
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  T* data;
};

// Bytes per second read and written by copying `bytes` through every thread.
double CopyCeiling(int threads, std::size_t bytes, int repeats = 7) {
  AlignedBuffer<char> in(bytes), out(bytes);
  std::memset(in.data, 1, bytes);
  std::memset(out.data, 0, bytes);
  const std::size_t share = bytes / threads;
  const double seconds = MedianTime(repeats, threads, [&](int t) {
    std::memcpy(out.data + t * share, in.data + t * share, share);
  });
  return 2.0 * static_cast<double>(share) * threads / seconds;
}

struct Case {
  std::string name;
  std::string dtype;
  std::int64_t entries;
  std::int64_t elements;
  double seconds;           // median over rounds
  double share_of_ceiling;  // the best rate of the rounds against their best ceiling
  double baseline_seconds;  // 0 when the baseline was not run
};

// The machine is shared and its speed drifts: every round measures the ceilings again next to the
// kernel, and the share reported is the best kernel rate against the best ceiling of the rounds.
template <class T>
Case RunCase(const std::string& name, Isa isa, std::int64_t entries, std::int64_t elements,
             int threads, bool with_baseline, int rounds) {
  AlignedBuffer<T> data(elements), out(elements), expected(elements);
  for (std::int64_t i = 0; i < elements; ++i) {
    data.data[i] = static_cast<T>((i % 1000) * 0.25 - 100);
  }
  std::vector<std::int32_t> table(entries);
  for (std::int64_t j = 0; j < entries; ++j) table[j] = static_cast<std::int32_t>(j % 7) - 3;
  std::vector<T> converted(table.begin(), table.end());
  const std::int64_t share = (elements + threads - 1) / threads;
  auto range = [&](int t, std::int64_t* begin, std::int64_t* end) {
    *begin = std::min(elements, t * share);
    *end = std::min(elements, *begin + share);
  };
  double fadd = 0, copy = 0, seconds = 1e30;
  for (int round = 0; round < rounds; ++round) {
    fadd = std::max(fadd, FaddCeiling(threads, constmem::cpu::BestIsa(), 1));
    copy = std::max(copy, CopyCeiling(threads, elements * sizeof(T), 1));
    seconds = std::min(seconds, MedianTime(1, threads, [&](int t) {
                         std::int64_t b, e;
                         range(t, &b, &e);
                         constmem::ops::FrobulateCpuRange(data.data, out.data, b, e,
                                                          converted.data(), entries, isa);
                       }));
  }
  const double adds_per_s = fadd * sizeof(float) / sizeof(T);  // vector adds in T
  const double ceiling = std::min(adds_per_s / entries, copy / (2.0 * sizeof(T)));
  Case result{name,    sizeof(T) == 4 ? "float32" : "float64", entries, elements,
              seconds, elements / seconds / ceiling,           0};
  if (with_baseline) {
    result.baseline_seconds = MedianTime(entries > 100 ? 1 : 3, threads, [&](int t) {
      std::int64_t b, e;
      range(t, &b, &e);
      constmem::ops::FrobulateRange(data.data, expected.data, b, e, table.data(), entries);
    });
    if (std::memcmp(out.data, expected.data, elements * sizeof(T)) != 0) {
      std::fprintf(stderr, "%s: kernel and baseline differ\n", name.c_str());
      std::exit(1);
    }
  }
  return result;
}

// An FMA-per-element kernel (Polyval, FirFilter) against min(FMA ceiling / FMAs per element,
// copy ceiling / bytes per element), measured in each round next to the kernel.
Case RunFmaCase(const std::string& name, std::int64_t entries, std::int64_t elements,
                double fmas_per_element, int threads, int rounds,
                const std::function<void(std::int64_t, std::int64_t)>& kernel,
                int bytes_per_element = 2 * sizeof(float), const char* dtype = "float32") {
  const std::int64_t share = (elements + threads - 1) / threads;
  double fma = 0, copy = 0, seconds = 1e30;
  for (int round = 0; round < rounds; ++round) {
    fma = std::max(fma, FmaCeiling(threads, constmem::cpu::BestIsa(), 1));
    copy = std::max(copy, CopyCeiling(threads, elements * bytes_per_element / 2, 1));
    seconds = std::min(seconds, MedianTime(1, threads, [&](int t) {
                         const std::int64_t begin = std::min(elements, t * share);
                         kernel(begin, std::min(elements, begin + share));
                       }));
  }
  const double ceiling = fma > 0 ? std::min(fma / fmas_per_element, copy / bytes_per_element)
                                 : copy / bytes_per_element;
  return Case{name, dtype, entries, elements, seconds, elements / seconds / ceiling, 0};
}

// Polyval at degrees 16 and 256, FirFilter with 17 and 63 taps and SeparableFilter, float32, every
// thread.
void RunFmaOps(std::int64_t elements, int threads, int rounds, std::vector<Case>* cases) {
  AlignedBuffer<float> x(elements), y(elements);
  for (std::int64_t i = 0; i < elements; ++i)
    x.data[i] = static_cast<float>((i % 2001) - 1000) / 1000;
  for (int degree : {16, 256}) {
    std::vector<float> coeffs(degree + 1);
    for (int j = 0; j <= degree; ++j) coeffs[j] = 1.0f / static_cast<float>(j + 2);
    const std::int64_t n = degree > 16 ? elements / 4 : elements;
    cases->push_back(RunFmaCase("polyval", degree + 1, n, degree, threads, rounds,
                                [&](std::int64_t begin, std::int64_t end) {
                                  constmem::ops::PolyvalCpuRange(x.data, y.data, begin, end,
                                                                 coeffs.data(), degree + 1);
                                }));
  }
  const std::int64_t length = 16384;
  auto fir = [&](const std::string& name, int taps, Isa isa) {
    std::vector<float> values(taps, 1.0f / static_cast<float>(taps));
    const auto shape = constmem::ops::MakeFirShape(elements / length, length, taps,
                                                   constmem::ops::FirPadding::kSame);
    cases->push_back(RunFmaCase(name, taps, shape.rows * length, taps, threads, rounds,
                                [&](std::int64_t begin, std::int64_t end) {
                                  constmem::ops::FirFilterCpuRange(x.data, y.data, shape,
                                                                   values.data(), begin, end, isa);
                                }));
  };
  // The op's own choice (cpu::BestIsaForShuffles), then each wide instruction set at 63 taps:
  // the evidence for that choice on this CPU.
  for (int taps : {17, 63}) fir("fir_filter", taps, constmem::cpu::BestIsaForShuffles());
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (isa <= constmem::cpu::BestIsa()) {
      fir(std::string("fir_filter ") + constmem::cpu::IsaName(isa), 63, isa);
    }
  }
  // SeparableFilter: rows, then columns, each pixel k FMAs a pass, float32 planes (NCHW) and
  // float32 and uint8 interleaved channels (NHWC). Its work units (planes' or images' row blocks)
  // are split between the threads as the pixels are.
  constmem::ops::SeparableShape image;
  image.images = 8;
  image.channels = 3;
  image.height = 540;
  image.width = 960;
  const std::int64_t pixels = image.Elements();
  AlignedBuffer<float> in(pixels), out(pixels);
  AlignedBuffer<std::uint8_t> in8(pixels), out8(pixels);
  for (std::int64_t i = 0; i < pixels; ++i) {
    in.data[i] = static_cast<float>(i % 251) / 251;
    in8.data[i] = static_cast<std::uint8_t>(i * 7 % 251);
  }
  auto separable = [&](const std::string& name, int k, Isa isa, bool bytes) {
    image.kh = image.kw = k;
    const std::vector<float> taps(2 * k, 1.0f / static_cast<float>(k));
    const std::int64_t units = constmem::ops::SeparableFilterCpuUnits(image);
    cases->push_back(RunFmaCase(
        name, k, pixels, 2.0 * k, threads, rounds,
        [&](std::int64_t begin, std::int64_t end) {
          const std::int64_t first = begin * units / pixels, last = end * units / pixels;
          if (bytes) {
            constmem::ops::SeparableFilterCpuRange(in8.data, out8.data, image, taps.data(), first,
                                                   last, isa);
          } else {
            constmem::ops::SeparableFilterCpuRange(in.data, out.data, image, taps.data(), first,
                                                   last, isa);
          }
        },
        bytes ? 2 : 2 * sizeof(float), bytes ? "uint8" : "float32"));
  };
  // The op's own choice (cpu::BestIsa), then each wide instruction set at 31 taps.
  for (int k : {3, 9, 31}) separable("separable_filter", k, constmem::cpu::BestIsa(), false);
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (isa <= constmem::cpu::BestIsa()) {
      separable(std::string("separable_filter ") + constmem::cpu::IsaName(isa), 31, isa, false);
    }
  }
  image.layout = constmem::ops::SeparableLayout::kChannelsLast;
  for (int k : {3, 9, 31}) separable("separable_filter nhwc", k, constmem::cpu::BestIsa(), false);
  for (int k : {3, 9, 31}) separable("separable_filter nhwc", k, constmem::cpu::BestIsa(), true);
}

}  // namespace

int main(int argc, char** argv) {
  const char* json_path = nullptr;
  bool quick = false;
  long long only_entries = 0;  // --entries N: only the cases of that table length
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path = argv[++i];
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--entries") == 0 && i + 1 < argc)
      only_entries = std::atoll(argv[++i]);
  }
  threads = std::max(threads, 1);
  const Isa best = constmem::cpu::BestIsa();
  const double fadd = FaddCeiling(threads, best);
  const double fadd_one = FaddCeiling(1, best);
  const std::int64_t elements = quick ? (1 << 20) : (16 << 20);
  const double copy = CopyCeiling(threads, elements * sizeof(double));
  const int rounds = quick ? 2 : 7;
  std::printf("cpu_bench: %d threads, best instruction set %s%s\n", threads,
              constmem::cpu::IsaName(best),
              constmem::cpu::FullRateAvx512() ? "" : " (512-bit arithmetic at half rate)");
  std::printf("fadd ceiling  %.1f G adds/s float32 (%.1f on one thread)\n", fadd / 1e9,
              fadd_one / 1e9);
  std::printf("copy ceiling  %.1f GB/s read + written\n", copy / 1e9);
  const double fma = FmaCeiling(threads, best);
  std::printf("fma ceiling   %.1f G FMAs/s float32\n", fma / 1e9);

  std::vector<Case> cases;
  // Long tables do 16,384 adds per element: fewer elements keep each run near a second.
  auto elements_for = [&](std::int64_t entries) {
    return entries > 1000 ? std::max<std::int64_t>(elements / 64, 1 << 16) : elements;
  };
  for (std::int64_t entries : {1, 16, 100, 1000, 16384}) {
    if (only_entries != 0 && entries != only_entries) continue;
    const bool baseline = entries <= 1000;
    cases.push_back(
        RunCase<float>("float32", best, entries, elements_for(entries), threads, baseline, rounds));
    cases.push_back(RunCase<double>("float64", best, entries, elements_for(entries), threads,
                                    baseline, rounds));
  }
  if (only_entries == 0) RunFmaOps(elements, threads, rounds, &cases);
  for (int isa = 0; isa < static_cast<int>(best); ++isa) {
    if (only_entries != 0 && only_entries != 100) break;
    if (!constmem::cpu::IsaSupported(static_cast<Isa>(isa))) continue;
    cases.push_back(RunCase<float>(std::string("float32 ") + IsaName(static_cast<Isa>(isa)),
                                   static_cast<Isa>(isa), 100, elements, threads, false, rounds));
  }

  std::printf("%-24s %-7s %7s %10s %12s %10s %12s\n", "case", "dtype", "entries", "elements",
              "G elem/s", "ceiling", "vs baseline");
  for (const Case& c : cases) {
    const double rate = c.elements / c.seconds;
    char vs[32] = "-";
    if (c.baseline_seconds > 0)
      std::snprintf(vs, sizeof(vs), "%.1fx", c.baseline_seconds / c.seconds);
    std::printf("%-24s %-7s %7lld %10lld %12.3f %9.1f%% %12s\n", c.name.c_str(), c.dtype.c_str(),
                static_cast<long long>(c.entries), static_cast<long long>(c.elements), rate / 1e9,
                100.0 * c.share_of_ceiling, vs);
  }
  if (json_path != nullptr) {
    FILE* f = std::fopen(json_path, "w");
    if (f == nullptr) return 1;
    std::fprintf(
        f,
        "{\"threads\": %d, \"isa\": \"%s\", \"full_rate_avx512\": %s, \"fadd_per_s\": %.4g, "
        "\"fadd_per_s_one_thread\": %.4g, \"fma_per_s\": %.4g, "
        "\"copy_bytes_per_s\": %.4g, \"cases\": [\n",
        threads, constmem::cpu::IsaName(best), constmem::cpu::FullRateAvx512() ? "true" : "false",
        fadd, fadd_one, fma, copy);
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      std::fprintf(f,
                   " {\"case\": \"%s\", \"dtype\": \"%s\", \"entries\": %lld, \"elements\": %lld, "
                   "\"seconds\": %.6g, \"share_of_ceiling\": %.4f, \"vs_baseline\": %.3f}%s\n",
                   c.name.c_str(), c.dtype.c_str(), static_cast<long long>(c.entries),
                   static_cast<long long>(c.elements), c.seconds, c.share_of_ceiling,
                   c.baseline_seconds > 0 ? c.baseline_seconds / c.seconds : 0.0,
                   i + 1 < cases.size() ? "," : "");
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}

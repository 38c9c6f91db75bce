// SPDX-License-Identifier: Apache-2.0
// Upfirdn on the GPU and the CPU, float32, against a memory ceiling measured in the same run (and
// float16 and bfloat16 as LaunchUpfirdn and the CPU kernel run them: each dtype's time, its share
// of a same-run copy of its own bytes, and float32's time over its time):
//   - resampling with scipy.signal.resample_poly's default filter (20 * max(up, down) + 1 taps):
//     48 kHz -> 16 kHz (up/down 1/3), 16 -> 48 kHz (3/1), 44.1 -> 48 kHz (160/147) and
//     48 -> 44.1 kHz (147/160); torchaudio's filters for 32, 48 and 96 kHz -> 8 kHz (1/4, 1/6,
//     1/12), 8 -> 96 kHz (12/1) and 11.025 <-> 96 kHz (1280/147, 147/1280);
//   - upfirdn with 31 and 255 taps at up/down 2/1, 1/2 and 3/2;
// each on [64, 480000] and [1, 28800000]. GB/s count the input plus the output bytes once; the
// ceiling is cudaMemcpyAsync device-to-device moving as many bytes (read + write) in the same run.
// Each case runs as LaunchUpfirdn chooses (device taps), then with every placement and lane
// arrangement that can take the table; "terms" is G fused multiply-adds a second (outputs times
// ceil(k / up)). A few outputs of every launch are checked against the scalar definition. The CPU
// figure runs UpfirdnCpuRange on every hardware thread over the [64, 480000] shape.
// --long-filters runs long filters instead (128 to 65,536 taps at 1/1, 4,096 at 2/1 and 1/2,
// 20,000 at 1/100, torchaudio's 31,005-tap filters between 11,025 and 192,000 Hz (147/2560 and
// 2560/147), on [64, 480000]): where a constant bank stops paying against global memory, and the
// tiled kernel's whole halo against its chunks of terms (2,048 and 2,049 taps at 1/1) and the
// direct kernel.
// Variants that cannot take the table (a constant bank past 4,096 taps, shared memory past 64 KiB,
// the tiled arrangements where no tile fits) are left out; the direct kernel runs with the taps in
// global memory.
//   upfirdn_bench [--json FILE] [--no-cpu] [--quick] [--long-filters]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "bench_util.cuh"
#include "checks.cuh"
#include "constmem/constmem.cuh"
#include "constmem/numeric.hpp"
#include "constmem/testing/gpu_testing.cuh"
#include "upfirdn/upfirdn_cpu.h"
#include "upfirdn/upfirdn_functor.h"
#include "upfirdn/upfirdn_launcher.h"

namespace {

using namespace constmem;
using namespace constmem::ops;

struct Case {
  std::string name;
  std::int64_t up, down, taps;
};

struct Row {
  std::string name, variant, placement, arrangement, dtype = "float32";
  std::int64_t rows = 0, length = 0, up = 0, down = 0, taps = 0;
  double ms = 0, bytes_per_s = 0, ceiling_fraction = 0, terms_per_s = 0;
  double float32_ratio = 1;  // float32's time over this row's (1 for float32)
};

template <class H>
const char* DtypeName() {
  return std::is_same<H, Float16>::value ? "float16" : "bfloat16";
}

// The 16-bit twin of Spot: outputs of y against the float definition on the converted samples,
// rounded to nearest even.
template <class H>
void SpotNarrow(const std::vector<float>& x_wide, const H* y_device, const UpfirdnShape& shape,
                const std::vector<float>& taps, const std::string& what) {
  std::mt19937_64 rng(shape.rows * 37 + shape.up * 5 + shape.down);
  const std::int64_t total = shape.rows * shape.outputs;
  for (int k = 0; k < 48; ++k) {
    const std::int64_t i = k < 8 ? k : k < 16 ? total - 1 - (k - 8) : rng() % total;
    H got{};
    CHECK_CUDA(cudaMemcpy(&got, y_device + i, sizeof(H), cudaMemcpyDeviceToHost));
    const std::int64_t row = i / shape.outputs;
    const H want = FromCompute<H>(
        UpfirdnOutput(x_wide.data() + row * shape.length, shape, taps.data(), i % shape.outputs));
    if (got.bits != want.bits) {
      std::fprintf(stderr, "%s: output %lld is 0x%04x, the definition's 0x%04x\n", what.c_str(),
                   static_cast<long long>(i), got.bits, want.bits);
      std::exit(1);
    }
  }
}

// A low-pass filter of `taps` taps (a windowed sinc, as resample_poly's default): the values do
// not change the timing, only keep the outputs finite.
std::vector<float> Filter(std::int64_t taps, std::int64_t up, std::int64_t down) {
  std::vector<float> h(taps);
  const double cutoff = 1.0 / static_cast<double>(std::max(up, down));
  const double center = (taps - 1) / 2.0;
  for (std::int64_t j = 0; j < taps; ++j) {
    const double t = (j - center) * cutoff;
    const double sinc = t == 0 ? 1.0 : std::sin(M_PI * t) / (M_PI * t);
    const double window = 0.54 - 0.46 * std::cos(2 * M_PI * j / std::max<double>(1, taps - 1));
    h[j] = static_cast<float>(up * cutoff * sinc * window);
  }
  return h;
}

// `samples` outputs of y (device) against the scalar definition: a launch that computed the wrong
// thing must not report a figure.
void Spot(const float* x_host, const float* y_device, const UpfirdnShape& shape,
          const std::vector<float>& taps, const std::string& what) {
  std::mt19937_64 rng(shape.rows * 31 + shape.up * 7 + shape.down);
  const std::int64_t total = shape.rows * shape.outputs;
  for (int k = 0; k < 48; ++k) {
    const std::int64_t i = k < 8 ? k : k < 16 ? total - 1 - (k - 8) : rng() % total;
    float got = 0;
    CHECK_CUDA(cudaMemcpy(&got, y_device + i, sizeof(float), cudaMemcpyDeviceToHost));
    const std::int64_t row = i / shape.outputs;
    const float want =
        UpfirdnOutput(x_host + row * shape.length, shape, taps.data(), i % shape.outputs);
    if (std::memcmp(&got, &want, sizeof(float)) != 0) {
      std::fprintf(stderr, "%s: output %lld is %.9g, the definition's %.9g\n", what.c_str(),
                   static_cast<long long>(i), got, want);
      std::exit(1);
    }
  }
}

double SecondsOfBest(int rounds, const std::function<void()>& run) {
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const char* json_path = nullptr;
  bool cpu = true, quick = false, long_filters = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    if (!std::strcmp(argv[i], "--no-cpu")) cpu = false;
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    if (!std::strcmp(argv[i], "--long-filters")) long_filters = true;
  }
  const std::vector<Case> long_cases = {
      {"fir 1/1", 1, 1, 128},
      {"fir 1/1", 1, 1, 512},
      {"fir 1/1", 1, 1, 1024},
      {"fir 1/1", 1, 1, 2048},
      {"fir 1/1", 1, 1, 2049},
      {"fir 1/1", 1, 1, 4096},
      {"fir 1/1", 1, 1, 12265},
      {"fir 1/1", 1, 1, 16384},
      {"fir 1/1", 1, 1, 65536},
      {"upfirdn 2/1", 2, 1, 4096},
      {"upfirdn 1/2", 1, 2, 4096},
      {"upfirdn 3/2", 3, 2, 4096},
      {"upfirdn 1/100", 1, 100, 20000},
      {"resample 192k->11.025k", 147, 2560, 31005},
      {"resample 11.025k->192k", 2560, 147, 31005},
  };
  const std::vector<Case> standard_cases = {
      {"resample 48k->16k", 1, 3, 2 * 10 * 3 + 1},
      {"resample 16k->48k", 3, 1, 2 * 10 * 3 + 1},
      {"resample 44.1k->48k", 160, 147, 2 * 10 * 160 + 1},
      {"resample 48k->44.1k", 147, 160, 2 * 10 * 160 + 1},
      // torchaudio's integer downsampling filters (width 6, rolloff 0.99): 2 ceil(6 Q / 0.99) + Q.
      {"resample 32k->8k", 1, 4, 54},
      {"resample 48k->8k", 1, 6, 80},
      {"resample 96k->8k", 1, 12, 158},
      // Upsampling by 12 and torchaudio's filters between 11.025 and 96 kHz.
      {"resample 8k->96k", 12, 1, 145},
      {"resample 11.025k->96k", 1280, 147, 15549},
      {"resample 96k->11.025k", 147, 1280, 16718},
      {"upfirdn 2/1", 2, 1, 31},
      {"upfirdn 1/2", 1, 2, 31},
      {"upfirdn 3/2", 3, 2, 31},
      {"upfirdn 2/1", 2, 1, 255},
      {"upfirdn 1/2", 1, 2, 255},
      {"upfirdn 3/2", 3, 2, 255},
  };
  const std::vector<Case>& cases = long_filters ? long_cases : standard_cases;
  if (long_filters) cpu = false;
  const std::int64_t shapes[][2] = {{64, quick ? 48000 : 480000}, {1, quick ? 2880000 : 28800000}};
  std::vector<Row> rows;

  const bool gpu = HasGpuOrSayNone("upfirdn_bench");
  cudaStream_t stream = nullptr;
  cudaDeviceProp prop{};
  if (gpu) {
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::printf("device: %s, %d SMs; median of %d after warm-up (CUDA events)\n", prop.name,
                prop.multiProcessorCount, kRepetitions);
    std::printf("%-20s %-13s %-34s %9s %8s %8s %8s\n", "case", "shape", "variant", "ms", "GB/s",
                "memcpy", "Gterm/s");
  }
  for (const auto& dims : shapes) {
    if (long_filters && &dims != &shapes[0]) break;  // the long filters on [64, 480000] alone
    const std::int64_t n_rows = dims[0], length = dims[1];
    std::vector<float> x(n_rows * length);
    {
      std::mt19937_64 rng(11);
      std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
      for (auto& v : x) v = uniform(rng);
    }
    if (!gpu) break;
    float *in = nullptr, *out = nullptr, *device_taps = nullptr;
    CHECK_CUDA(cudaMalloc(&in, x.size() * sizeof(float)));
    CHECK_CUDA(constmem::testing::CopyToDevice(in, x.data(), x.size() * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&device_taps, kUpfirdnMaxTaps * sizeof(float)));
    for (const Case& c : cases) {
      UpfirdnShape shape;
      CHECK_OK(MakeUpfirdnShape(n_rows, length, c.taps, c.up, c.down, &shape));
      const std::int64_t total = shape.rows * shape.outputs;
      CHECK_CUDA(cudaMalloc(&out, total * sizeof(float)));
      const auto taps = Filter(c.taps, c.up, c.down);
      CHECK_CUDA(
          constmem::testing::CopyToDevice(device_taps, taps.data(), taps.size() * sizeof(float)));
      const double bytes = static_cast<double>(x.size() + total) * sizeof(float);
      // The ceiling: a device-to-device copy of half the bytes (it reads and writes each).
      const std::size_t copy_bytes = static_cast<std::size_t>(bytes / 2) / 16 * 16;
      void* copy_from = nullptr;
      void* copy_to = nullptr;
      CHECK_CUDA(cudaMalloc(&copy_from, copy_bytes));
      CHECK_CUDA(cudaMalloc(&copy_to, copy_bytes));
      CHECK_CUDA(cudaMemset(copy_from, 0, copy_bytes));
      const double copy_ms = MedianMs(stream, [&] {
        CHECK_CUDA(
            cudaMemcpyAsync(copy_to, copy_from, copy_bytes, cudaMemcpyDeviceToDevice, stream));
      });
      const double ceiling = 2.0 * copy_bytes / (copy_ms * 1e-3);
      CHECK_CUDA(cudaFree(copy_from));
      CHECK_CUDA(cudaFree(copy_to));
      const double terms = static_cast<double>(total) * ((c.taps + c.up - 1) / c.up);
      const std::string shape_name =
          "[" + std::to_string(n_rows) + ", " + std::to_string(length) + "]";
      std::printf("%-20s %-13s %-34s %9.4f %8.0f %8s %8s  (k=%lld)\n", c.name.c_str(),
                  shape_name.c_str(), "cudaMemcpyAsync D2D", copy_ms, ceiling / 1e9, "100%", "",
                  static_cast<long long>(c.taps));
      const TableView<float> host_view{taps.data(), c.taps, SourceKind::kPageableHost, true};
      const TableView<float> device_view{device_taps, c.taps, SourceKind::kDevice};
      auto measure = [&](const std::string& variant, const TableView<float>& view,
                         Placement placement, UpfirdnArrangement arrangement, bool chosen) {
        LaunchReport report;
        const double ms = MedianMs(stream, [&] {
          if (chosen) {
            CHECK_OK(LaunchUpfirdn<float>(stream, in, out, shape, view, &report));
          } else {
            CHECK_OK(LaunchUpfirdnWithArrangement<float>(stream, in, out, shape, view, placement,
                                                         arrangement, &report));
          }
        });
        CHECK_CUDA(cudaStreamSynchronize(stream));
        Spot(x.data(), out, shape, taps, c.name + " " + variant);
        Row row;
        row.name = c.name;
        row.variant = variant;
        row.placement = PlacementName(report.placement);
        row.arrangement =
            UpfirdnArrangementName(chosen || arrangement == UpfirdnArrangement::kAuto
                                       ? UpfirdnChosenArrangement<float>(shape, report.placement)
                                       : arrangement);
        row.rows = n_rows;
        row.length = length;
        row.up = c.up;
        row.down = c.down;
        row.taps = c.taps;
        row.ms = ms;
        row.bytes_per_s = bytes / (ms * 1e-3);
        row.ceiling_fraction = row.bytes_per_s / ceiling;
        row.terms_per_s = terms / (ms * 1e-3);
        const std::string label = variant + " (" + row.placement + ", " + row.arrangement + ")";
        std::printf("%-20s %-13s %-34s %9.4f %8.0f %7.1f%% %8.0f\n", c.name.c_str(),
                    shape_name.c_str(), label.c_str(), ms, row.bytes_per_s / 1e9,
                    100 * row.ceiling_fraction, row.terms_per_s / 1e9);
        rows.push_back(row);
      };
      measure("LaunchUpfirdn", device_view, Placement::kConstantBank, UpfirdnArrangement::kAuto,
              true);
      const std::size_t chosen_row = rows.size() - 1;
      auto tiled = [&](Placement placement) {
        return UpfirdnChosenArrangement<float>(shape, placement) != UpfirdnArrangement::kDirect;
      };
      if (c.taps * sizeof(float) <= kDefaultByValueBytes && tiled(Placement::kByValue)) {
        measure("by_value", host_view, Placement::kByValue, UpfirdnArrangement::kPhasePerWarp,
                false);
      }
      if (c.taps <= 4096 && tiled(Placement::kConstantBank)) {
        measure("constant_bank", device_view, Placement::kConstantBank,
                UpfirdnArrangement::kPhasePerWarp, false);
      }
      for (Placement placement : {Placement::kGlobalMemory, Placement::kSharedMemory}) {
        if (placement == Placement::kSharedMemory && c.taps * sizeof(float) > 64 * 1024) continue;
        if (!tiled(placement)) continue;
        for (UpfirdnArrangement arrangement :
             {UpfirdnArrangement::kPhasePerWarp, UpfirdnArrangement::kPhasePerLane}) {
          measure(PlacementName(placement), device_view, placement, arrangement, false);
        }
      }
      measure("global_memory", device_view, Placement::kGlobalMemory, UpfirdnArrangement::kDirect,
              false);
      // float16 and bfloat16 as LaunchUpfirdn runs them, against a copy of their own bytes.
      const double float32_ms = rows[chosen_row].ms;
      auto measure_narrow = [&](auto tag) {
        using H = decltype(tag);
        std::vector<H> x16(x.size());
        std::vector<float> x_wide(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) {
          x16[i] = FromCompute<H>(x[i]);
          x_wide[i] = ToCompute<float>(x16[i]);
        }
        H *in16 = nullptr, *out16 = nullptr;
        CHECK_CUDA(cudaMalloc(&in16, x16.size() * sizeof(H)));
        CHECK_CUDA(cudaMalloc(&out16, total * sizeof(H)));
        CHECK_CUDA(constmem::testing::CopyToDevice(in16, x16.data(), x16.size() * sizeof(H)));
        const double narrow_bytes = static_cast<double>(x16.size() + total) * sizeof(H);
        const std::size_t narrow_copy = static_cast<std::size_t>(narrow_bytes / 2) / 16 * 16;
        void* from = nullptr;
        void* to = nullptr;
        CHECK_CUDA(cudaMalloc(&from, narrow_copy));
        CHECK_CUDA(cudaMalloc(&to, narrow_copy));
        CHECK_CUDA(cudaMemset(from, 0, narrow_copy));
        const double narrow_copy_ms = MedianMs(stream, [&] {
          CHECK_CUDA(cudaMemcpyAsync(to, from, narrow_copy, cudaMemcpyDeviceToDevice, stream));
        });
        CHECK_CUDA(cudaFree(from));
        CHECK_CUDA(cudaFree(to));
        LaunchReport report;
        const double ms = MedianMs(stream, [&] {
          CHECK_OK(LaunchUpfirdn<H>(stream, in16, out16, shape, device_view, &report));
        });
        CHECK_CUDA(cudaStreamSynchronize(stream));
        SpotNarrow(x_wide, out16, shape, taps, c.name + " " + DtypeName<H>());
        Row row;
        row.name = c.name;
        row.variant = "LaunchUpfirdn";
        row.dtype = DtypeName<H>();
        row.placement = PlacementName(report.placement);
        row.arrangement =
            UpfirdnArrangementName(UpfirdnChosenArrangement<H>(shape, report.placement));
        row.rows = n_rows;
        row.length = length;
        row.up = c.up;
        row.down = c.down;
        row.taps = c.taps;
        row.ms = ms;
        row.bytes_per_s = narrow_bytes / (ms * 1e-3);
        row.ceiling_fraction = narrow_copy_ms / ms;
        row.terms_per_s = terms / (ms * 1e-3);
        row.float32_ratio = float32_ms / ms;
        const std::string label = std::string("LaunchUpfirdn ") + DtypeName<H>() + " (" +
                                  row.placement + ", " + row.arrangement + ")";
        std::printf("%-20s %-13s %-34s %9.4f %8.0f %7.1f%% %8.0f  x%.2f float32's speed\n",
                    c.name.c_str(), shape_name.c_str(), label.c_str(), ms, row.bytes_per_s / 1e9,
                    100 * row.ceiling_fraction, row.terms_per_s / 1e9, row.float32_ratio);
        rows.push_back(row);
        CHECK_CUDA(cudaFree(in16));
        CHECK_CUDA(cudaFree(out16));
      };
      measure_narrow(Float16{});
      measure_narrow(BFloat16{});
      CHECK_CUDA(cudaFree(out));
    }
    CHECK_CUDA(cudaFree(in));
    CHECK_CUDA(cudaFree(device_taps));
  }

  // The CPU: UpfirdnCpuRange on every hardware thread, the work units split evenly.
  std::vector<Row> cpu_rows;
  if (cpu) {
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const std::int64_t n_rows = 64, length = quick ? 48000 : 480000;
    std::vector<float> x(n_rows * length);
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (auto& v : x) v = uniform(rng);
    std::printf("\nCPU: %d threads, %s, [%lld, %lld], best of 3\n", threads,
                cpu::IsaName(cpu::BestIsaForShuffles()), static_cast<long long>(n_rows),
                static_cast<long long>(length));
    std::printf("%-20s %6s %-9s %9s %8s %8s %10s\n", "case", "taps", "dtype", "ms", "GB/s",
                "Gterm/s", "x float32");
    const std::vector<Float16> x_half = [&] {
      std::vector<Float16> v(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) v[i] = FromCompute<Float16>(x[i]);
      return v;
    }();
    const std::vector<BFloat16> x_bf16 = [&] {
      std::vector<BFloat16> v(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) v[i] = FromCompute<BFloat16>(x[i]);
      return v;
    }();
    for (const Case& c : cases) {
      UpfirdnShape shape;
      CHECK_OK(MakeUpfirdnShape(n_rows, length, c.taps, c.up, c.down, &shape));
      const std::int64_t total = shape.rows * shape.outputs;
      const auto taps = Filter(c.taps, c.up, c.down);
      double float32_ms = 0;
      auto time = [&](const auto& data, const char* dtype) {
        using T = typename std::decay_t<decltype(data)>::value_type;
        std::vector<T> y(total);
        const double seconds = SecondsOfBest(3, [&] {
          std::vector<std::thread> pool;
          for (int t = 0; t < threads; ++t) {
            pool.emplace_back([&, t] {
              UpfirdnCpuRange(data.data(), y.data(), shape, taps.data(), total * t / threads,
                              total * (t + 1) / threads);
            });
          }
          for (auto& thread : pool) thread.join();
        });
        Row row;
        row.name = c.name;
        row.variant = "cpu";
        row.dtype = dtype;
        row.rows = n_rows;
        row.length = length;
        row.up = c.up;
        row.down = c.down;
        row.taps = c.taps;
        row.ms = seconds * 1e3;
        if (std::is_same<T, float>::value) float32_ms = row.ms;
        row.float32_ratio = float32_ms / row.ms;
        row.bytes_per_s = static_cast<double>(data.size() + total) * sizeof(T) / seconds;
        row.terms_per_s = static_cast<double>(total) * ((c.taps + c.up - 1) / c.up) / seconds;
        std::printf("%-20s %6lld %-9s %9.3f %8.1f %8.1f %10.2f\n", c.name.c_str(),
                    static_cast<long long>(c.taps), dtype, row.ms, row.bytes_per_s / 1e9,
                    row.terms_per_s / 1e9, row.float32_ratio);
        cpu_rows.push_back(row);
      };
      time(x, "float32");
      time(x_half, "float16");
      time(x_bf16, "bfloat16");
    }
  }

  if (json_path != nullptr) {
    Json json;
    json.Add("device", "\"" + std::string(gpu ? prop.name : "none") + "\"");
    auto list = [](const std::vector<Row>& of) {
      std::string text = "[";
      for (const Row& row : of) {
        text += std::string(text.size() > 1 ? ",\n  " : "\n  ") + "{\"case\": \"" + row.name +
                "\", \"rows\": " + std::to_string(row.rows) +
                ", \"length\": " + std::to_string(row.length) +
                ", \"up\": " + std::to_string(row.up) + ", \"down\": " + std::to_string(row.down) +
                ", \"taps\": " + std::to_string(row.taps) + ", \"dtype\": \"" + row.dtype +
                "\", \"variant\": \"" + row.variant + "\", \"placement\": \"" + row.placement +
                "\", \"arrangement\": \"" + row.arrangement + "\", \"ms\": " + Num(row.ms) +
                ", \"bytes_per_s\": " + Num(row.bytes_per_s) +
                ", \"memcpy_fraction\": " + Num(row.ceiling_fraction) +
                ", \"terms_per_s\": " + Num(row.terms_per_s) +
                ", \"float32_ratio\": " + Num(row.float32_ratio) + "}";
      }
      return text + "]";
    };
    json.Add("gpu", list(rows));
    json.Add("cpu", list(cpu_rows));
    std::FILE* file = std::fopen(json_path, "w");
    if (file == nullptr) return 1;
    std::fprintf(file, "%s\n}\n", json.text.c_str());
    std::fclose(file);
  }
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's figures, each against a ceiling measured in the same run:
//   - GPU: the op on float32, float16, bfloat16 and uint8 planes [32, 3, 1080, 1920] and
//     [256, 3, 224, 224] (NCHW), k x k taps for k = 3, 5, 7, 9, 17, 31, 63, reflect borders, shared
//     taps by value from the host (and, for float32, a device table in a constant bank or read in
//     place), as GB/s of one read and one write of the images, against a device-to-device
//     cudaMemcpyAsync of as many bytes (read + write); for float16 and bfloat16 also their speed
//     over float32's (by value, same shape and k);
//   - GPU: the fused kernel's longest filter on this GPU (its large tile's: k = 297 on an H200)
//     against the two passes just past it, float32 [32, 3, 1080, 1920]: the cost of a call one
//     step past the limit (--long-filters: every path over longer filters);
//   - CPU: the CPU kernel over every hardware thread on [256, 3, 224, 224] in the same four types,
//     against a memcpy of the same bytes over the same threads (16-bit types also against
//     float32's time).
//   separable_filter_bench [--json FILE] [--no-cpu] [--long-filters] [--dtypes A,B] [--ks 3,9]
// --dtypes and --ks measure a subset of the GPU cases and skip the rest (one case a run, for a
// profiler: `ncu -k regex:SeparableRegisterKernel -c 1 separable_filter_bench --no-cpu --dtypes
// float16 --ks 9`).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "bench_util.cuh"
#include "checks.cuh"
#include "constmem/constmem.cuh"
#include "constmem/testing/gpu_testing.cuh"
#include "separable_filter/separable_filter_cpu.h"
#include "separable_filter/separable_filter_launcher.h"

namespace {

using constmem::ops::SeparableShape;

struct Row {
  std::string device, dtype, shape, placement;
  int k = 0;
  double ms = 0, bytes_per_s = 0, ceiling_bytes_per_s = 0;
  double over_float32 = 0;  // float32's time over this one's (16-bit types), else 0
};

// The data types measured, float32 first (the others' speed is stated against it).
struct BenchType {
  const char* name;
  int bytes;
};
constexpr BenchType kBenchTypes[] = {{"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"uint8", 1}};

// out[i] = in[i] as float16 or bfloat16, rounded to nearest even.
template <class Out>
__global__ void ToSixteenBitKernel(const float* in, Out* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    if constexpr (std::is_same<Out, constmem::Float16>::value) {
      out[i] = Out{__half_as_ushort(__float2half_rn(in[i]))};
    } else {
      out[i] = Out{__bfloat16_as_ushort(__float2bfloat16_rn(in[i]))};
    }
  }
}

SeparableShape Planes(std::int64_t b, std::int64_t c, std::int64_t h, std::int64_t w, int k) {
  SeparableShape s;
  s.images = b;
  s.channels = c;
  s.height = h;
  s.width = w;
  s.kh = k;
  s.kw = k;
  s.layout = constmem::ops::SeparableLayout::kPlanes;
  s.border = constmem::ops::SeparableBorder::kReflect;
  return s;
}

std::string ShapeName(const SeparableShape& s) {
  return "[" + std::to_string(s.images) + ",3," + std::to_string(s.height) + "," +
         std::to_string(s.width) + "]";
}

// A normalised smoothing kernel of k taps (sums near 1: uint8 results stay in range).
std::vector<float> SmoothTaps(int k) {
  std::vector<float> taps(2 * k);
  for (int j = 0; j < k; ++j) taps[j] = taps[k + j] = 1.0f / static_cast<float>(k);
  return taps;
}

// Median seconds of three runs of `run` after one warm-up.
template <class F>
double MedianSeconds(F&& run) {
  run();
  std::vector<double> s;
  for (int r = 0; r < 3; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run();
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(s.begin(), s.end());
  return s[1];
}

// `fn(begin, end)` over [0, n) in one contiguous share per thread.
template <class F>
void OnThreads(int threads, std::int64_t n, F&& fn) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    const std::int64_t begin = n * t / threads, end = n * (t + 1) / threads;
    pool.emplace_back([&fn, begin, end] { fn(begin, end); });
  }
  for (auto& thread : pool) thread.join();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace constmem;
  using namespace constmem::ops;
  const char* json_path = nullptr;
  bool cpu = true;
  bool long_filters = false;
  std::vector<int> ks = {3, 5, 7, 9, 17, 31, 63};
  std::string dtypes = "float32,float16,bfloat16,uint8";
  bool subset = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--dtypes") && i + 1 < argc) {
      dtypes = argv[++i];
      subset = true;
    }
    if (!std::strcmp(argv[i], "--ks") && i + 1 < argc) {
      ks.clear();
      for (const char* k = argv[++i]; *k != '\0';) {
        char* end = nullptr;
        ks.push_back(static_cast<int>(std::strtol(k, &end, 10)));
        k = *end == ',' ? end + 1 : end;
      }
      subset = true;
    }
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    if (!std::strcmp(argv[i], "--no-cpu")) cpu = false;
    if (!std::strcmp(argv[i], "--long-filters")) long_filters = true;
  }
  std::vector<Row> rows;
  // Whether --dtypes lists `name` (all by default).
  auto wanted = [&](const std::string& name) {
    return ("," + dtypes + ",").find("," + name + ",") != std::string::npos;
  };
  std::string device_name = "none";
  if (HasGpuOrSayNone("separable_filter_bench")) {
    cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    device_name = prop.name;
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const std::int64_t most = std::int64_t{32} * 3 * 1080 * 1920;
    float *in = nullptr, *out = nullptr, *device_taps = nullptr;
    CHECK_CUDA(cudaMalloc(&in, most * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&out, most * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&device_taps, 2 * 128 * sizeof(float)));
    FillRandomKernel<float><<<prop.multiProcessorCount * 8, 256, 0, stream>>>(in, most, 7u);
    std::vector<std::uint8_t> bytes(most);
    for (std::int64_t i = 0; i < most; ++i)
      bytes[i] = static_cast<std::uint8_t>(i * 2654435761u >> 24);
    std::uint8_t *in8 = nullptr, *out8 = nullptr;
    CHECK_CUDA(cudaMalloc(&in8, most));
    CHECK_CUDA(cudaMalloc(&out8, most));
    // float16 and bfloat16 images: the float32 ones rounded.
    Float16 *in_half = nullptr, *out_half = nullptr;
    BFloat16 *in_bf16 = nullptr, *out_bf16 = nullptr;
    CHECK_CUDA(cudaMalloc(&in_half, most * 2));
    CHECK_CUDA(cudaMalloc(&out_half, most * 2));
    CHECK_CUDA(cudaMalloc(&in_bf16, most * 2));
    CHECK_CUDA(cudaMalloc(&out_bf16, most * 2));
    ToSixteenBitKernel<<<prop.multiProcessorCount * 8, 256, 0, stream>>>(in, in_half, most);
    ToSixteenBitKernel<<<prop.multiProcessorCount * 8, 256, 0, stream>>>(in, in_bf16, most);
    std::printf(
        "device: %s, %d SMs; median of %d after warm-up (CUDA events); GB/s = (read + "
        "write) / time\n",
        prop.name, prop.multiProcessorCount, kRepetitions);
    std::printf("%-8s %-18s %4s %14s %10s %10s %10s %8s %8s\n", "dtype", "shape", "k", "placement",
                "ms", "GB/s", "copy GB/s", "of copy", "x f32");
    CHECK_CUDA(constmem::testing::CopyToDevice(in8, bytes.data(), static_cast<std::size_t>(most)));
    for (const SeparableShape& base : {Planes(32, 3, 1080, 1920, 3), Planes(256, 3, 224, 224, 3)}) {
      const std::int64_t n = base.Elements();
      std::vector<double> float32_ms(ks.size());  // by value, for the 16-bit types' ratio
      for (const BenchType& type : kBenchTypes) {
        const std::string dtype = type.name;
        if (!wanted(dtype)) continue;
        const std::size_t data_bytes = static_cast<std::size_t>(n) * type.bytes;
        void* copy_in = dtype == "float32"    ? static_cast<void*>(in)
                        : dtype == "float16"  ? static_cast<void*>(in_half)
                        : dtype == "bfloat16" ? static_cast<void*>(in_bf16)
                                              : static_cast<void*>(in8);
        void* copy_out = dtype == "float32"    ? static_cast<void*>(out)
                         : dtype == "float16"  ? static_cast<void*>(out_half)
                         : dtype == "bfloat16" ? static_cast<void*>(out_bf16)
                                               : static_cast<void*>(out8);
        const double copy_ms = MedianMs(stream, [&] {
          CHECK_CUDA(
              cudaMemcpyAsync(copy_out, copy_in, data_bytes, cudaMemcpyDeviceToDevice, stream));
        });
        const double copy_rate = 2.0 * data_bytes / (copy_ms * 1e-3);
        for (std::size_t ki = 0; ki < ks.size(); ++ki) {
          const int k = ks[ki];
          SeparableShape s = base;
          s.kh = s.kw = k;
          const std::vector<float> taps = SmoothTaps(k);
          CHECK_CUDA(constmem::testing::CopyToDevice(device_taps, taps.data(),
                                                     taps.size() * sizeof(float)));
          const TableView<float> host{taps.data(), 2 * k, SourceKind::kPageableHost};
          const TableView<float> device{device_taps, 2 * k, SourceKind::kDevice};
          // Host taps by value; device taps copied into the bank, or read in place (global
          // memory: what launches of up to kSeparableSmallLaunchElements outputs do).
          for (Placement placement :
               {Placement::kByValue, Placement::kConstantBank, Placement::kGlobalMemory}) {
            if (dtype != "float32" && placement != Placement::kByValue) continue;
            const TableView<float>& view = placement == Placement::kByValue ? host : device;
            const double ms = MedianMs(stream, [&] {
              if (dtype == "float32") {
                CHECK_OK((LaunchSeparableFilterWithPlacement<float, float>(stream, in, out, s, view,
                                                                           placement)));
              } else if (dtype == "float16") {
                CHECK_OK((LaunchSeparableFilterWithPlacement<Float16, float>(
                    stream, in_half, out_half, s, view, placement)));
              } else if (dtype == "bfloat16") {
                CHECK_OK((LaunchSeparableFilterWithPlacement<BFloat16, float>(
                    stream, in_bf16, out_bf16, s, view, placement)));
              } else {
                CHECK_OK((LaunchSeparableFilterWithPlacement<std::uint8_t, float>(
                    stream, in8, out8, s, view, placement)));
              }
            });
            Row row;
            row.device = "gpu";
            row.dtype = dtype;
            row.shape = ShapeName(s);
            row.placement = PlacementName(placement);
            row.k = k;
            row.ms = ms;
            row.bytes_per_s = 2.0 * data_bytes / (ms * 1e-3);
            row.ceiling_bytes_per_s = copy_rate;
            if (dtype == "float32" && placement == Placement::kByValue) float32_ms[ki] = ms;
            if (type.bytes == 2) row.over_float32 = float32_ms[ki] / ms;
            char ratio[16] = "";
            if (row.over_float32 > 0)
              std::snprintf(ratio, sizeof(ratio), "%.2fx", row.over_float32);
            std::printf("%-8s %-18s %4d %14s %10.4f %10.0f %10.0f %7.1f%% %8s\n", row.dtype.c_str(),
                        row.shape.c_str(), k, row.placement.c_str(), ms, row.bytes_per_s / 1e9,
                        copy_rate / 1e9, 100 * row.bytes_per_s / copy_rate, ratio);
            rows.push_back(row);
          }
        }
      }
    }
    // The fused kernel's longest filter on this GPU against the two passes just past it: what a
    // call one step past the limit costs, float32 [32, 3, 1080, 1920], taps by value. With
    // --long-filters, every path each filter can take (the large tile, the small one, the two
    // passes, each where the fused bound and the shared memory allow it) over longer filters, as
    // G FMA/s.
    if (!subset) {
      const SeparableShape base = Planes(32, 3, 1080, 1920, 3);
      std::size_t device_shared = 0;
      CHECK_OK(MaxSharedBytesPerBlock(0, &device_shared));
      int largest = 127;
      for (SeparableShape s = base;; ++largest) {
        s.kh = s.kw = largest + 1;
        if (SeparableFilterBlockThreads<float>(s, device_shared) != 256) break;
      }
      std::vector<int> long_ks = {largest, largest + 1};
      if (long_filters) long_ks = {127, 129, 191, 255, largest, largest + 1, 383, 511};
      double inside_ms = 0;
      for (int k : long_ks) {
        SeparableShape s = base;
        s.kh = s.kw = k;
        const std::vector<float> taps = SmoothTaps(k);
        const TableView<float> host{taps.data(), 2 * k, SourceKind::kPageableHost};
        // The shared memory a block each path is tried with: the device's, the most at which the
        // large tile no longer fits, the least the two passes need.
        std::vector<std::size_t> limits = {device_shared};
        if (long_filters) {
          std::size_t limit = device_shared;
          while (limit > 1024 && SeparableFilterBlockThreads<float>(s, limit) == 256) limit -= 1024;
          if (limit != device_shared) limits.push_back(limit);
          limit = 1024;
          while (limit < device_shared && SeparableFilterBlockThreads<float>(s, limit) == 0) {
            limit += 1024;
          }
          limits.push_back(limit);
        }
        int previous = -1;
        for (std::size_t limit : limits) {
          const int threads = SeparableFilterBlockThreads<float>(s, limit);
          if (threads == previous || threads == 0) continue;
          previous = threads;
          const double ms = MedianMs(stream, [&] {
            CHECK_OK((LaunchSeparableFilterWithSharedMemory<float, float>(
                stream, in, out, s, host, Placement::kByValue, limit)));
          });
          if (inside_ms == 0) inside_ms = ms;
          const char* path = threads == 256  ? "large tile"
                             : threads == 64 ? "small tile"
                                             : "two passes";
          const double fmas = 2.0 * k * static_cast<double>(s.Elements());
          std::printf(
              "long filters: float32 %s k = %d %-10s %9.4f ms %7.0f G FMA/s %6.2fx k = %d\n",
              ShapeName(s).c_str(), k, path, ms, fmas / (ms * 1e-3) / 1e9, ms / inside_ms,
              long_ks.front());
        }
      }
    }
    CHECK_CUDA(cudaFree(in));
    CHECK_CUDA(cudaFree(out));
    CHECK_CUDA(cudaFree(device_taps));
    CHECK_CUDA(cudaFree(in8));
    CHECK_CUDA(cudaFree(out8));
    for (void* p : {static_cast<void*>(in_half), static_cast<void*>(out_half),
                    static_cast<void*>(in_bf16), static_cast<void*>(out_bf16)}) {
      CHECK_CUDA(cudaFree(p));
    }
    CHECK_CUDA(cudaStreamDestroy(stream));
  }

  if (cpu) {
    const int threads = std::max(1u, std::thread::hardware_concurrency());
    const SeparableShape base = Planes(256, 3, 224, 224, 3);
    const std::int64_t n = base.Elements();
    std::printf("CPU: %d threads, %s, median of 3 after warm-up\n", threads,
                cpu::IsaName(cpu::BestIsa()));
    std::vector<float> x(n), y(n);
    for (std::int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 251) / 251.0f;
    std::vector<std::uint8_t> x8(n), y8(n);
    for (std::int64_t i = 0; i < n; ++i) x8[i] = static_cast<std::uint8_t>(i * 2654435761u >> 24);
    std::vector<Float16> x_half(n), y_half(n);
    std::vector<BFloat16> x_bf16(n), y_bf16(n);
    for (std::int64_t i = 0; i < n; ++i) {
      x_half[i] = FromCompute<Float16>(x[i]);
      x_bf16[i] = FromCompute<BFloat16>(x[i]);
    }
    std::vector<double> float32_s(ks.size());
    for (const BenchType& type : kBenchTypes) {
      const std::string dtype = type.name;
      const std::size_t data_bytes = static_cast<std::size_t>(n) * type.bytes;
      const char* from = dtype == "float32"    ? reinterpret_cast<const char*>(x.data())
                         : dtype == "float16"  ? reinterpret_cast<const char*>(x_half.data())
                         : dtype == "bfloat16" ? reinterpret_cast<const char*>(x_bf16.data())
                                               : reinterpret_cast<const char*>(x8.data());
      char* to = dtype == "float32"    ? reinterpret_cast<char*>(y.data())
                 : dtype == "float16"  ? reinterpret_cast<char*>(y_half.data())
                 : dtype == "bfloat16" ? reinterpret_cast<char*>(y_bf16.data())
                                       : reinterpret_cast<char*>(y8.data());
      const double copy_s = MedianSeconds([&] {
        OnThreads(threads, static_cast<std::int64_t>(data_bytes),
                  [&](std::int64_t b, std::int64_t e) { std::memcpy(to + b, from + b, e - b); });
      });
      const double copy_rate = 2.0 * data_bytes / copy_s;
      for (std::size_t ki = 0; ki < ks.size(); ++ki) {
        const int k = ks[ki];
        SeparableShape s = base;
        s.kh = s.kw = k;
        const std::vector<float> taps = SmoothTaps(k);
        const std::int64_t units = SeparableFilterCpuUnits(s);
        const double sec = MedianSeconds([&] {
          OnThreads(threads, units, [&](std::int64_t b, std::int64_t e) {
            if (dtype == "float32") {
              SeparableFilterCpuRange(x.data(), y.data(), s, taps.data(), b, e);
            } else if (dtype == "float16") {
              SeparableFilterCpuRange(x_half.data(), y_half.data(), s, taps.data(), b, e);
            } else if (dtype == "bfloat16") {
              SeparableFilterCpuRange(x_bf16.data(), y_bf16.data(), s, taps.data(), b, e);
            } else {
              SeparableFilterCpuRange(x8.data(), y8.data(), s, taps.data(), b, e);
            }
          });
        });
        Row row;
        row.device = "cpu";
        row.dtype = dtype;
        row.shape = ShapeName(s);
        row.placement = "host";
        row.k = k;
        row.ms = sec * 1e3;
        row.bytes_per_s = 2.0 * data_bytes / sec;
        row.ceiling_bytes_per_s = copy_rate;
        if (dtype == "float32") float32_s[ki] = sec;
        if (type.bytes == 2) row.over_float32 = float32_s[ki] / sec;
        std::printf(
            "cpu %-8s %-18s %4d %10.2f ms %8.1f GB/s, memcpy %8.1f GB/s (%5.1f%%), %.2fx float32\n",
            row.dtype.c_str(), row.shape.c_str(), k, row.ms, row.bytes_per_s / 1e9, copy_rate / 1e9,
            100 * row.bytes_per_s / copy_rate, dtype == "float32" ? 1.0 : float32_s[ki] / sec);
        rows.push_back(row);
      }
    }
  }

  if (json_path != nullptr) {
    Json json;
    json.Add("gpu", "\"" + device_name + "\"");
    std::string list = "[";
    for (const Row& row : rows) {
      list += std::string(list.size() > 1 ? ",\n  " : "\n  ") + "{\"device\": \"" + row.device +
              "\", \"dtype\": \"" + row.dtype + "\", \"shape\": \"" + row.shape +
              "\", \"k\": " + std::to_string(row.k) + ", \"placement\": \"" + row.placement +
              "\", \"ms\": " + Num(row.ms) + ", \"bytes_per_s\": " + Num(row.bytes_per_s) +
              ", \"copy_bytes_per_s\": " + Num(row.ceiling_bytes_per_s) +
              ", \"copy_fraction\": " + Num(row.bytes_per_s / row.ceiling_bytes_per_s) +
              (row.over_float32 > 0 ? ", \"speed_over_float32\": " + Num(row.over_float32) : "") +
              "}";
    }
    json.Add("runs", list + "]");
    std::FILE* file = std::fopen(json_path, "w");
    if (file == nullptr) return 1;
    std::fprintf(file, "%s\n}\n", json.text.c_str());  // Json leaves the object open
    std::fclose(file);
  }
  return 0;
}

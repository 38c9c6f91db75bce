// SPDX-License-Identifier: Apache-2.0
// Kernel-level figures for Polyval and FirFilter on the GPU, each against ceilings measured in the
// same run:
//   - memory: an elementwise pass (out = in + s, what TensorFlow's own elementwise kernels do) over
//     the same bytes the op reads and writes, and a 16-byte-vector copy (the harder ceiling);
//   - arithmetic: independent FMA chains (FFMA for float32), and FirFilter's tap loop on its own;
//   - Polyval at degree 16 (memory-bound) and 256 (FMA-bound) on 16 Mi float32 elements;
//   - FirFilter with 17, 63 and 513 taps on a [4096, 16384] float32 input, SAME;
// each with its table by value, in a constant bank and in global memory, to show what the
// placement buys;
//   - Polyval (degree 16 and 256) and Interpolate (4,096 knots) on 16 Mi float32, float16 and
//     bfloat16 elements (computed in float32), each against a copy of its own bytes and against
//     float32's time;
//   - FirFilter on float16 and bfloat16 input as LaunchFirFilter places the taps, beside float32
//     placed the same way: each dtype's time, its share of a same-run copy of its own bytes, and
//     float32's time over its time.
//   ops_bench [--json FILE]
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "bench_util.cuh"
#include "checks.cuh"
#include "constmem/constmem.cuh"
#include "constmem/numeric.hpp"
#include "constmem/testing/gpu_testing.cuh"
#include "fir_filter/fir_filter_launcher.h"
#include "interpolate/interpolate_launcher.h"
#include "polyval/polyval_launcher.h"

namespace {

// 8 independent FMA chains per thread: the FMA pipes are the limit.
__global__ void FmaCeilingKernel(float* out, float a, int iterations) {
  float v[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) v[k] = static_cast<float>(threadIdx.x + k);
#pragma unroll 8
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = fmaf(v[k], a, 0.5f);
  }
  float sum = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) sum += v[k];
  if (sum == -1.2345f) out[0] = sum;
}

// FirFilter's tap loop with no memory traffic: 32 outputs a thread from a ring of five segments of
// eight samples in registers, taps read at constant indices from a by-value table, two blocks a
// multiprocessor as FirFilter's kernel; a segment is refilled by arithmetic where FirFilter loads
// it from shared memory. What this reaches is the most FirFilter can, once the taps outnumber
// what the memory traffic hides.
struct TapLoopTaps {
  float values[40];
};
constexpr int kTapLoopOutputs = 32, kTapLoopChunk = 8, kTapLoopSegments = 5;
constexpr int kTapLoopFmasPerTurn = kTapLoopOutputs * kTapLoopChunk * kTapLoopSegments;
__global__ void __launch_bounds__(256, 2)
    TapLoopCeilingKernel(float* out, int turns, const __grid_constant__ TapLoopTaps taps) {
  constexpr int R = kTapLoopOutputs, K = kTapLoopChunk, S = kTapLoopSegments;
  float acc[R], ring[S][K];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0;
#pragma unroll
  for (int s = 0; s < S; ++s) {
#pragma unroll
    for (int k = 0; k < K; ++k) ring[s][k] = static_cast<float>(threadIdx.x + s * K + k);
  }
  for (int turn = 0; turn < turns; ++turn) {
#pragma unroll
    for (int s = 0; s < S; ++s) {
#pragma unroll
      for (int jj = 0; jj < K; ++jj) {
        const float tap = taps.values[s * K + jj];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const int o = r + jj;
          acc[r] = fmaf(ring[(s + o / K) % S][o % K], tap, acc[r]);
        }
      }
#pragma unroll
      for (int k = 0; k < K; ++k) ring[s][k] += 1.0f;
    }
  }
  float sum = 0;
#pragma unroll
  for (int r = 0; r < R; ++r) sum += acc[r];
  if (sum == -1.2345f) out[0] = sum;
}

__global__ void CopyKernel(const float4* __restrict__ in, float4* __restrict__ out,
                           std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = in[i];
  }
}

struct Row {
  std::string op, placement, dtype = "float32";
  int table = 0;
  double ms = 0, memory_fraction = 0, copy_fraction = 0, fma_fraction = 0;
  double float32_ratio = 1;  // float32's time over this row's, where measured beside it
};

template <class In>
__global__ void NarrowFromFloatKernel(const float* in, In* out, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = constmem::FromCompute<In>(in[i]);
  }
}

struct NarrowRow {
  std::string op, dtype;
  int table = 0;
  double ms = 0, copy_fraction = 0, float32_speedup = 0;
};

// Polyval and Interpolate on `n` elements of float32, float16 and bfloat16, in one run: each
// one's time, its share of a copy of its own bytes, and its speed over float32's. `x` holds n
// float32 values in [-1000, 1000].
std::vector<NarrowRow> BenchNarrow(cudaStream_t stream, int sms, const float* x, std::int64_t n) {
  using namespace constmem;
  using namespace constmem::ops;
  float* y = nullptr;
  void *narrow_x = nullptr, *narrow_y = nullptr;
  CHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&narrow_x, n * 2));
  CHECK_CUDA(cudaMalloc(&narrow_y, n * 2));
  auto copy_bytes_per_s = [&](std::int64_t bytes) {
    const double ms = MedianMs(stream, [&] {
      CopyKernel<<<sms * 8, 512, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                              reinterpret_cast<float4*>(y), bytes / 16);
    });
    return 2.0 * bytes / (ms * 1e-3);
  };
  const double copy32 = copy_bytes_per_s(n * 4), copy16 = copy_bytes_per_s(n * 2);
  std::vector<NarrowRow> rows;
  // launch(data, out) for each dtype, float32 first.
  auto run = [&](const std::string& op, int table, auto&& launch) {
    double float32_ms = 0;
    auto one = [&](auto zero, const char* dtype) {
      using In = decltype(zero);
      const In* in = reinterpret_cast<const In*>(x);
      In* out = reinterpret_cast<In*>(y);
      if constexpr (sizeof(In) == 2) {
        NarrowFromFloatKernel<In><<<sms * 8, 256, 0, stream>>>(x, static_cast<In*>(narrow_x), n);
        in = static_cast<const In*>(narrow_x);
        out = static_cast<In*>(narrow_y);
      }
      const double ms = MedianMs(stream, [&] { launch(in, out); });
      if (sizeof(In) == 4) float32_ms = ms;
      NarrowRow row;
      row.op = op;
      row.dtype = dtype;
      row.table = table;
      row.ms = ms;
      row.copy_fraction = 2.0 * n * sizeof(In) / (ms * 1e-3) / (sizeof(In) == 4 ? copy32 : copy16);
      row.float32_speedup = float32_ms / ms;
      std::printf("%-12s %6d %9s %10.4f %9.1f%% %9.2fx\n", op.c_str(), table, dtype, ms,
                  100 * row.copy_fraction, row.float32_speedup);
      rows.push_back(row);
    };
    one(float{}, "float32");
    one(Float16{}, "float16");
    one(BFloat16{}, "bfloat16");
  };
  std::printf("\n16 Mi elements, host tables; copy: of the same bytes, this run\n");
  std::printf("%-12s %6s %9s %10s %10s %10s\n", "op", "table", "dtype", "ms", "copy", "x float32");
  for (int degree : {16, 256}) {
    std::vector<float> coeffs(degree + 1);
    for (int j = 0; j <= degree; ++j) coeffs[j] = 1.0f / static_cast<float>(j + 2);
    const TableView<float> view{coeffs.data(), degree + 1, SourceKind::kPageableHost};
    run("polyval", degree,
        [&](const auto* in, auto* out) { CHECK_OK(LaunchPolyval(stream, in, out, n, view)); });
  }
  std::vector<float> knots(4096);
  for (std::size_t j = 0; j < knots.size(); ++j) knots[j] = static_cast<float>(j % 97) / 97.0f;
  const TableView<float> knot_view{knots.data(), 4096, SourceKind::kPageableHost};
  run("interpolate", 4096, [&](const auto* in, auto* out) {
    CHECK_OK(LaunchInterpolate(stream, in, out, n, knot_view, -1000.0, 1000.0));
  });
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaFree(narrow_x));
  CHECK_CUDA(cudaFree(narrow_y));
  return rows;
}

std::string NarrowJson(const std::vector<NarrowRow>& rows) {
  std::string list = "[";
  for (const NarrowRow& row : rows) {
    list += std::string(list.size() > 1 ? ",\n  " : "\n  ") + "{\"op\": \"" + row.op +
            "\", \"table\": " + std::to_string(row.table) + ", \"dtype\": \"" + row.dtype +
            "\", \"ms\": " + Num(row.ms) + ", \"copy_fraction\": " + Num(row.copy_fraction) +
            ", \"float32_speedup\": " + Num(row.float32_speedup) + "}";
  }
  return list + "]";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace constmem;
  using namespace constmem::ops;
  const char* json_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
  }
  if (!HasGpuOrSayNone("ops_bench")) return 0;
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // Ceilings.
  const int blocks = sms * 16, threads = 512, iterations = 4096;
  float* scratch = nullptr;
  CHECK_CUDA(cudaMalloc(&scratch, 64));
  const double fma_ms = MedianMs(stream, [&] {
    FmaCeilingKernel<<<blocks, threads, 0, stream>>>(scratch, 0.999f, iterations);
  });
  const double fma_per_s = 8.0 * blocks * threads * iterations / (fma_ms * 1e-3);
  TapLoopTaps tap_loop_taps;
  for (int j = 0; j < 40; ++j) tap_loop_taps.values[j] = 1.0f / static_cast<float>(j + 1);
  const int tap_loop_blocks = sms * 2, tap_loop_turns = 512;
  const double tap_loop_ms = MedianMs(stream, [&] {
    TapLoopCeilingKernel<<<tap_loop_blocks, 256, 0, stream>>>(scratch, tap_loop_turns,
                                                              tap_loop_taps);
  });
  const double tap_loop_fma_per_s = static_cast<double>(kTapLoopFmasPerTurn) * tap_loop_turns *
                                    tap_loop_blocks * 256 / (tap_loop_ms * 1e-3);
  const std::int64_t fir_rows = 4096, fir_length = 16384;
  const std::int64_t elements = fir_rows * fir_length;  // the largest input: 256 MiB
  float *in = nullptr, *out = nullptr;
  CHECK_CUDA(cudaMalloc(&in, elements * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&out, elements * sizeof(float)));
  FillRandomKernel<float><<<sms * 8, 256, 0, stream>>>(in, elements, 3u);
  // Bytes per second of a copy of `n` floats (read n, write n).
  auto copy_bytes_per_s = [&](std::int64_t n) {
    const double ms = MedianMs(stream, [&] {
      CopyKernel<<<sms * 8, 512, 0, stream>>>(reinterpret_cast<const float4*>(in),
                                              reinterpret_cast<float4*>(out), n / 4);
    });
    return 2.0 * n * sizeof(float) / (ms * 1e-3);
  };
  const std::int64_t polyval_elements = std::int64_t{16} << 20;
  const double polyval_copy = copy_bytes_per_s(polyval_elements);
  const double fir_copy = copy_bytes_per_s(elements);
  auto elementwise_bytes_per_s = [&](std::int64_t n) {
    const double ms = MedianMs(
        stream, [&] { ElementwiseKernel<float><<<sms * 8, 512, 0, stream>>>(in, out, n, 1.5f); });
    return 2.0 * n * sizeof(float) / (ms * 1e-3);
  };
  const double polyval_elementwise = elementwise_bytes_per_s(polyval_elements);
  const double fir_elementwise = elementwise_bytes_per_s(elements);
  std::printf("device: %s, %d SMs; median of %d after warm-up (CUDA events)\n", prop.name, sms,
              kRepetitions);
  std::printf(
      "ceiling FFMA: %.2f T FMA/s (FirFilter's tap loop alone: %.2f, %.1f%%); elementwise: %.0f "
      "GB/s (16 Mi floats), %.0f GB/s (64 Mi floats); vector copy: %.0f / %.0f GB/s\n",
      fma_per_s / 1e12, tap_loop_fma_per_s / 1e12, 100 * tap_loop_fma_per_s / fma_per_s,
      polyval_elementwise / 1e9, fir_elementwise / 1e9, polyval_copy / 1e9, fir_copy / 1e9);
  std::printf("%-10s %6s %14s %10s %10s %10s %10s %10s\n", "op", "table", "placement", "ms", "GB/s",
              "memory", "copy", "fma");

  std::vector<Row> rows;
  auto report = [&](const std::string& op, int table, Placement placement, double ms, double bytes,
                    double fmas, double memory_ceiling, double copy_ceiling) {
    const double bytes_per_s = bytes / (ms * 1e-3);
    Row row;
    row.op = op;
    row.placement = PlacementName(placement);
    row.table = table;
    row.ms = ms;
    row.memory_fraction = bytes_per_s / memory_ceiling;
    row.copy_fraction = bytes_per_s / copy_ceiling;
    row.fma_fraction = fmas / (ms * 1e-3) / fma_per_s;
    std::printf("%-10s %6d %14s %10.4f %10.0f %9.1f%% %9.1f%% %9.1f%%\n", op.c_str(), table,
                row.placement.c_str(), ms, bytes_per_s / 1e9, 100 * row.memory_fraction,
                100 * row.copy_fraction, 100 * row.fma_fraction);
    rows.push_back(row);
  };
  // Each table three ways: a host table by value, and a device copy in a constant bank or read in
  // place from global memory.
  auto placements = [&](const std::vector<float>& table, auto&& run) {
    float* device_table = nullptr;
    CHECK_CUDA(cudaMalloc(&device_table, table.size() * sizeof(float)));
    CHECK_CUDA(
        constmem::testing::CopyToDevice(device_table, table.data(), table.size() * sizeof(float)));
    const auto n = static_cast<std::int64_t>(table.size());
    const TableView<float> host{table.data(), n, SourceKind::kPageableHost};
    const TableView<float> device{device_table, n, SourceKind::kDevice};
    if (n <= 1024) run(host, Placement::kByValue);
    run(device, Placement::kConstantBank);
    run(device, Placement::kGlobalMemory);
    CHECK_CUDA(cudaFree(device_table));
  };

  for (int degree : {16, 256}) {
    std::vector<float> coeffs(degree + 1);
    for (int j = 0; j <= degree; ++j) coeffs[j] = 1.0f / static_cast<float>(j + 2);
    placements(coeffs, [&](const TableView<float>& view, Placement placement) {
      const double ms = MedianMs(stream, [&] {
        CHECK_OK(
            LaunchPolyvalWithPlacement<float>(stream, in, out, polyval_elements, view, placement));
      });
      report("polyval", degree, placement, ms, 2.0 * polyval_elements * sizeof(float),
             static_cast<double>(polyval_elements) * degree, polyval_elementwise, polyval_copy);
    });
  }
  for (int taps : {17, 63, 513}) {
    std::vector<float> values(taps);
    for (int j = 0; j < taps; ++j) values[j] = 1.0f / static_cast<float>(taps);
    const FirShape shape = MakeFirShape(fir_rows, fir_length, taps, FirPadding::kSame);
    placements(values, [&](const TableView<float>& view, Placement placement) {
      const double ms = MedianMs(stream, [&] {
        CHECK_OK(LaunchFirFilterWithPlacement<float>(stream, in, out, shape, view, placement));
      });
      report("fir_filter", taps, placement, ms, 2.0 * elements * sizeof(float),
             static_cast<double>(elements) * taps, fir_elementwise, fir_copy);
    });
  }
  // float16 and bfloat16 (the same buffers' bytes as 16-bit data: the timing does not depend on
  // the values), the taps from the device where LaunchFirFilter places them, against float32 so.
  const double half_copy = copy_bytes_per_s(elements / 2);
  std::printf("%-10s %6s %-9s %14s %10s %10s %10s %10s\n", "op", "table", "dtype", "placement",
              "ms", "GB/s", "copy", "x float32");
  for (int taps : {17, 63, 513}) {
    std::vector<float> values(taps);
    for (int j = 0; j < taps; ++j) values[j] = 1.0f / static_cast<float>(taps);
    float* device_taps = nullptr;
    CHECK_CUDA(cudaMalloc(&device_taps, taps * sizeof(float)));
    CHECK_CUDA(constmem::testing::CopyToDevice(device_taps, values.data(), taps * sizeof(float)));
    const TableView<float> view{device_taps, taps, SourceKind::kDevice};
    const FirShape shape = MakeFirShape(fir_rows, fir_length, taps, FirPadding::kSame);
    double float32_ms = 0;
    auto run = [&](auto tag, const char* dtype, double copy_ceiling) {
      using T = decltype(tag);
      LaunchReport launch;
      const double ms = MedianMs(stream, [&] {
        CHECK_OK(LaunchFirFilter<T>(stream, reinterpret_cast<const T*>(in),
                                    reinterpret_cast<T*>(out), shape, view, &launch));
      });
      if (std::is_same<T, float>::value) float32_ms = ms;
      const double bytes_per_s = 2.0 * elements * sizeof(T) / (ms * 1e-3);
      Row row;
      row.op = "fir_filter";
      row.dtype = dtype;
      row.placement = PlacementName(launch.placement);
      row.table = taps;
      row.ms = ms;
      row.memory_fraction = bytes_per_s / (sizeof(T) == 4 ? fir_elementwise : half_copy);
      row.copy_fraction = bytes_per_s / copy_ceiling;
      row.fma_fraction = static_cast<double>(elements) * taps / (ms * 1e-3) / fma_per_s;
      row.float32_ratio = float32_ms / ms;
      std::printf("%-10s %6d %-9s %14s %10.4f %10.0f %9.1f%% %10.2f\n", "fir_filter", taps, dtype,
                  row.placement.c_str(), ms, bytes_per_s / 1e9, 100 * row.copy_fraction,
                  row.float32_ratio);
      rows.push_back(row);
    };
    run(float{}, "float32", fir_copy);
    run(Float16{}, "float16", half_copy);
    run(BFloat16{}, "bfloat16", half_copy);
    CHECK_CUDA(cudaFree(device_taps));
  }

  const std::vector<NarrowRow> narrow = BenchNarrow(stream, sms, in, polyval_elements);

  if (json_path != nullptr) {
    Json json;
    json.Add("device", "\"" + std::string(prop.name) + "\"");
    json.Add("fma_per_s", Num(fma_per_s));
    json.Add("fir_tap_loop_fma_per_s", Num(tap_loop_fma_per_s));
    json.Add("elementwise_bytes_per_s_16mi", Num(polyval_elementwise));
    json.Add("elementwise_bytes_per_s_64mi", Num(fir_elementwise));
    json.Add("copy_bytes_per_s_16mi", Num(polyval_copy));
    json.Add("copy_bytes_per_s_64mi", Num(fir_copy));
    std::string list = "[";
    for (const Row& row : rows) {
      list += std::string(list.size() > 1 ? ",\n  " : "\n  ") + "{\"op\": \"" + row.op +
              "\", \"dtype\": \"" + row.dtype + "\", \"float32_ratio\": " + Num(row.float32_ratio) +
              ", \"table\": " + std::to_string(row.table) + ", \"placement\": \"" + row.placement +
              "\", \"ms\": " + Num(row.ms) + ", \"memory_fraction\": " + Num(row.memory_fraction) +
              ", \"copy_fraction\": " + Num(row.copy_fraction) +
              ", \"fma_fraction\": " + Num(row.fma_fraction) + "}";
    }
    json.Add("kernels", list + "]");
    json.Add("narrow_kernels", NarrowJson(narrow));
    std::FILE* file = std::fopen(json_path, "w");
    if (file == nullptr) return 1;
    std::fprintf(file, "%s\n}\n", json.text.c_str());  // Json leaves the object open
    std::fclose(file);
  }
  return 0;
}

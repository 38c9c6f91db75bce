// SPDX-License-Identifier: Apache-2.0
// Kernel-level figures for Frobulate on the GPU, each against ceilings measured in the same run:
//   - the FADD/DADD rate (independent chains) and an elementwise pass (out = in + s);
//   - Frobulate's own kernel at table lengths 1, 16, 100, 1,000 and 16,384, float32 and float64;
//   - the placement matrix: by-value, constant bank and global memory, warp-uniform and
//     lane-divergent reads, and whether the automatic choice is the fastest;
//   - the seed question's approach (a synchronous pageable copy per call and a lane-divergent
//     read) against constmem.
//   kernel_bench [--elements N] [--json FILE]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.cuh"
#include "checks.cuh"
#include "constmem/constmem.cuh"
#include "constmem/testing/gpu_testing.cuh"
#include "frobulate/frobulate_functor.h"
#include "frobulate/frobulate_launcher.h"

// Banks are declared at global scope (the macro opens its own namespaces).
CONSTMEM_DEFINE_BANK(matrix_bank, std::int32_t, 16384, 1);

namespace {

// The placement matrix uses this simple kernel (one element per thread) for both access patterns,
// so that uniform and divergent differ only in the index: j + lane * spread, wrapped.
struct BankReader {
  __device__ std::int32_t operator[](int i) const { return matrix_bank_constmem_symbol[i]; }
};

template <class Table>
__global__ void PatternKernel(const float* __restrict__ data, float* __restrict__ out,
                              std::int64_t n, int table_size, int spread,
                              const __grid_constant__ Table table) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const int offset = (threadIdx.x & 31) * spread;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    float value = data[i];
    int k = offset % table_size;
    for (int j = 0; j < table_size; ++j) {
      value = value + static_cast<float>(table[k]);
      k = k + 1 == table_size ? 0 : k + 1;
    }
    out[i] = value;
  }
}

// The seed question's kernel, with its bugs fixed only as far as needed to run it: the result is
// stored and the lane-dependent index wraps instead of running past the table. Its `cdata` is the
// matrix bank's plain __constant__ array (this file has no constant memory left for another).
#define seed_cdata matrix_bank_constmem_symbol
__global__ void SeedKernel(const float* data, float* out, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float value = data[i];
  for (int j = 0; j < 100; ++j) value += seed_cdata[(i + j) % 100];
  out[i] = value;
}

// A device copy of a table, for the device-source rows; the caller frees it.
std::int32_t* DeviceCopy(const std::vector<std::int32_t>& table) {
  std::int32_t* copy = nullptr;
  const std::size_t bytes = table.size() * sizeof(std::int32_t);
  CHECK_CUDA(cudaMalloc(&copy, bytes));
  CHECK_CUDA(constmem::testing::CopyToDevice(copy, table.data(), bytes));
  return copy;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace constmem;
  using namespace constmem::ops;
  std::int64_t elements = std::int64_t{256} << 20;
  const char* json_path = nullptr;
  bool quick = false;  // ceilings and float32 at 100 entries only, for comparing kernel variants
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    if (!std::strcmp(argv[i], "--elements") && i + 1 < argc) elements = std::atoll(argv[++i]);
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
  }
  if (!HasGpuOrSayNone("kernel_bench")) return 0;
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int sms = prop.multiProcessorCount;
  Json json;
  json.Add("device", "\"" + std::string(prop.name) + "\"");
  json.Add("elements", std::to_string(elements));

  // Ceilings.
  const int ceiling_blocks = sms * 16, ceiling_threads = 512, ceiling_iterations = 4096;
  const double adds = 8.0 * ceiling_blocks * ceiling_threads * ceiling_iterations;
  float* scratch = nullptr;
  CHECK_CUDA(cudaMalloc(&scratch, 64));
  const double fadd_ms = MedianMs(stream, [&] {
    AddCeilingKernel<float>
        <<<ceiling_blocks, ceiling_threads, 0, stream>>>(scratch, 1.0f, ceiling_iterations);
  });
  const double dadd_ms = MedianMs(stream, [&] {
    AddCeilingKernel<double><<<ceiling_blocks, ceiling_threads, 0, stream>>>(
        reinterpret_cast<double*>(scratch), 1.0, ceiling_iterations);
  });
  const double fadd_per_s = adds / (fadd_ms * 1e-3), dadd_per_s = adds / (dadd_ms * 1e-3);

  float *data = nullptr, *out = nullptr;
  CHECK_CUDA(cudaMalloc(&data, elements * sizeof(double)));
  CHECK_CUDA(cudaMalloc(&out, elements * sizeof(double)));
  std::printf(
      "device: %s, %d SMs, %.0f MHz max; %lld elements; median of %d after warm-up (CUDA events)\n",
      prop.name, sms, clock_khz / 1e3, static_cast<long long>(elements), kRepetitions);
  std::printf("ceiling FADD: %.2f T adds/s   DADD: %.2f T adds/s\n", fadd_per_s / 1e12,
              dadd_per_s / 1e12);

  std::string frobulate_rows = "[";
  for (int dtype = 0; dtype < (quick ? 1 : 2); ++dtype) {
    const bool is_float = dtype == 0;
    const std::size_t bytes_per = is_float ? 4 : 8;
    if (is_float) {
      FillRandomKernel<float><<<sms * 8, 256, 0, stream>>>(data, elements, 17u);
    } else {
      FillRandomKernel<double>
          <<<sms * 8, 256, 0, stream>>>(reinterpret_cast<double*>(data), elements, 17u);
    }
    const double elementwise_ms = MedianMs(stream, [&] {
      if (is_float) {
        ElementwiseKernel<float><<<sms * 8, 512, 0, stream>>>(data, out, elements, 1.5f);
      } else {
        ElementwiseKernel<double><<<sms * 8, 512, 0, stream>>>(
            reinterpret_cast<double*>(data), reinterpret_cast<double*>(out), elements, 1.5);
      }
    });
    const double memory_elements_per_s = elements / (elementwise_ms * 1e-3);
    const double add_rate = is_float ? fadd_per_s : dadd_per_s;
    std::printf("\n%s: elementwise ceiling %.0f GB/s (%.1f G elements/s)\n",
                is_float ? "float32" : "float64", memory_elements_per_s * 2 * bytes_per / 1e9,
                memory_elements_per_s / 1e9);
    std::printf("%8s %14s %12s %12s %10s %8s\n", "table", "placement", "ms", "G elem/s", "GB/s",
                "ceiling");
    for (int n : {1, 16, 100, 1000, 16384}) {
      if (quick && n != 100) continue;
      std::vector<std::int32_t> table(n);
      for (int j = 0; j < n; ++j) table[j] = (j * 7919) % 201 - 100;
      std::int32_t* device_table = DeviceCopy(table);
      // Each row runs the way the op places the table: a device table read in place (up to 1,024
      // entries) or from a constant bank, int32 converted per entry in the kernel; a host table
      // small enough by value (for float data converted once, on the host).
      const TableView<std::int32_t> device_view{device_table, n, SourceKind::kDevice};
      const TableView<std::int32_t> host_view{table.data(), n, SourceKind::kPageableHost};
      for (const TableView<std::int32_t>* view : {&device_view, &host_view}) {
        const Placement placement = FrobulatePlacement(n, view->source, elements);
        if (view == &host_view && placement != Placement::kByValue) continue;
        const double ms = MedianMs(stream, [&] {
          if (is_float) {
            CHECK_OK(LaunchFrobulate<float>(stream, data, out, elements, *view));
          } else {
            CHECK_OK(LaunchFrobulate<double>(stream, reinterpret_cast<double*>(data),
                                             reinterpret_cast<double*>(out), elements, *view));
          }
        });
        const double rate = elements / (ms * 1e-3);
        const double ceiling = std::min(memory_elements_per_s, add_rate / n);
        std::printf("%8d %14s %12.3f %12.2f %10.0f %7.1f%%\n", n, PlacementName(placement), ms,
                    rate / 1e9, rate * 2 * bytes_per / 1e9, 100 * rate / ceiling);
        frobulate_rows +=
            std::string(frobulate_rows.size() > 1 ? ",\n  " : "\n  ") + "{\"dtype\": \"" +
            (is_float ? "float32" : "float64") + "\", \"table\": " + std::to_string(n) +
            ", \"placement\": \"" + PlacementName(placement) + "\", \"ms\": " + Num(ms) +
            ", \"elements_per_s\": " + Num(rate) + ", \"ceiling_elements_per_s\": " + Num(ceiling) +
            ", \"fraction\": " + Num(rate / ceiling) + "}";
      }
      cudaFree(device_table);
    }
    json.Add(is_float ? "elementwise_float32_elements_per_s" : "elementwise_float64_elements_per_s",
             Num(memory_elements_per_s));
  }
  json.Add("fadd_per_s", Num(fadd_per_s));
  json.Add("dadd_per_s", Num(dadd_per_s));
  json.Add("frobulate", frobulate_rows + "]");

  if (quick) return 0;
  // Placement matrix, float32, on an eighth of the elements (divergent cells are slow).
  const std::int64_t matrix_elements = elements / 8;
  json.Add("matrix_elements", std::to_string(matrix_elements));
  FillRandomKernel<float><<<sms * 8, 256, 0, stream>>>(data, matrix_elements, 5u);
  std::printf(
      "\nplacement matrix (float32, %lld elements; product kernel for 'auto' and uniform cells)\n",
      static_cast<long long>(matrix_elements));
  std::printf("%8s %-10s %12s %12s %12s %12s %10s\n", "table", "pattern", "by_value", "const_bank",
              "global", "auto", "auto/best");
  std::string matrix_rows = "[";
  for (int n : {16, 100, 1000, 4096, 16384}) {
    std::vector<std::int32_t> table(n);
    for (int j = 0; j < n; ++j) table[j] = (j * 31) % 97 - 48;
    std::int32_t* device_table = DeviceCopy(table);
    const TableView<std::int32_t> host_view{table.data(), n, SourceKind::kPageableHost};
    const TableView<std::int32_t> device_view{device_table, n, SourceKind::kDevice};
    const int kCapacity = 1024;
    auto product = [&](Placement p) -> double {
      if (p == Placement::kByValue && n > kCapacity) return NAN;
      const TableView<std::int32_t>& view = p == Placement::kByValue ? host_view : device_view;
      return MedianMs(stream, [&] {
        CHECK_OK(LaunchFrobulateWithPlacement<float>(stream, data, out, matrix_elements, view, p));
      });
    };
    const double uniform[3] = {product(Placement::kByValue), product(Placement::kConstantBank),
                               product(Placement::kGlobalMemory)};
    // The automatic choice for a host table (what FrobulateHostTable and the attr op do).
    const Placement chosen = FrobulatePlacement(n, SourceKind::kPageableHost, matrix_elements);
    const double automatic = uniform[static_cast<int>(chosen)];
    double best = INFINITY;
    for (double v : uniform)
      if (!std::isnan(v)) best = std::min(best, v);
    // And for a device table, which can only be copied into a bank or read in place.
    const Placement chosen_device = FrobulatePlacement(n, SourceKind::kDevice, matrix_elements);
    const double device_automatic = uniform[static_cast<int>(chosen_device)];
    const double device_best = std::min(uniform[1], uniform[2]);
    std::printf(
        "%8d %-10s %12.3f %12.3f %12.3f %12.3f %9.3fx  (auto=%s; device table: auto=%s, "
        "%.3fx)\n",
        n, "uniform", uniform[0], uniform[1], uniform[2], automatic, automatic / best,
        PlacementName(chosen), PlacementName(chosen_device), device_automatic / device_best);

    // Both patterns through the simple kernel, so the divergence factor is like for like.
    double pattern[2][3];
    CHECK_CUDA(
        cudaMemcpyToSymbol(matrix_bank_constmem_symbol, table.data(), n * sizeof(std::int32_t)));
    for (int spread = 0; spread < 2; ++spread) {
      const int blocks = sms * 8;
      pattern[spread][0] = NAN;
      if (n <= kCapacity) {
        ByValueTable<std::int32_t, 1024> by_value;
        CHECK_OK(FillByValueTable(table.data(), n, &by_value));
        pattern[spread][0] = MedianMs(stream, [&] {
          PatternKernel<<<blocks, 256, 0, stream>>>(data, out, matrix_elements, n, spread,
                                                    by_value);
        });
      }
      pattern[spread][1] = MedianMs(stream, [&] {
        PatternKernel<<<blocks, 256, 0, stream>>>(data, out, matrix_elements, n, spread,
                                                  BankReader{});
      });
      pattern[spread][2] = MedianMs(stream, [&] {
        PatternKernel<<<blocks, 256, 0, stream>>>(data, out, matrix_elements, n, spread,
                                                  GlobalTableReader<std::int32_t>{device_table});
      });
    }
    std::printf("%8d %-10s %12.3f %12.3f %12.3f   simple kernel, uniform\n", n, "", pattern[0][0],
                pattern[0][1], pattern[0][2]);
    std::printf("%8d %-10s %12.3f %12.3f %12.3f   divergent/uniform: %.1fx %.1fx %.1fx\n", n,
                "divergent", pattern[1][0], pattern[1][1], pattern[1][2],
                pattern[1][0] / pattern[0][0], pattern[1][1] / pattern[0][1],
                pattern[1][2] / pattern[0][2]);
    auto cell = [&](double v) { return std::isnan(v) ? std::string("null") : Num(v); };
    matrix_rows += std::string(matrix_rows.size() > 1 ? ",\n  " : "\n  ") +
                   "{\"table\": " + std::to_string(n) +
                   ", \"uniform_ms\": {\"by_value\": " + cell(uniform[0]) +
                   ", \"constant_bank\": " + cell(uniform[1]) +
                   ", \"global_memory\": " + cell(uniform[2]) + "}, \"auto\": \"" +
                   PlacementName(chosen) + "\", \"auto_over_best\": " + Num(automatic / best) +
                   ", \"device_auto\": \"" + PlacementName(chosen_device) +
                   "\", \"device_auto_over_best\": " + Num(device_automatic / device_best) +
                   ", \"simple_uniform_ms\": {\"by_value\": " + cell(pattern[0][0]) +
                   ", \"constant_bank\": " + cell(pattern[0][1]) +
                   ", \"global_memory\": " + cell(pattern[0][2]) +
                   "}, \"simple_divergent_ms\": {\"by_value\": " + cell(pattern[1][0]) +
                   ", \"constant_bank\": " + cell(pattern[1][1]) +
                   ", \"global_memory\": " + cell(pattern[1][2]) + "}}";
    cudaFree(device_table);
  }
  json.Add("placement_matrix", matrix_rows + "]");

  // The seed question's approach against constmem: 100-entry table, per call.
  {
    std::vector<int> table(100);
    for (int j = 0; j < 100; ++j) table[j] = j - 50;
    const std::int64_t n = matrix_elements;
    const double seed_ms = MedianMs(stream, [&] {
      CHECK_CUDA(cudaMemcpyToSymbol(seed_cdata, table.data(),
                                    sizeof(int) * 100));  // synchronous, pageable
      SeedKernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(data, out, n);
    });
    const TableView<std::int32_t> view{table.data(), 100, SourceKind::kPageableHost};
    const double ours_ms =
        MedianMs(stream, [&] { CHECK_OK(LaunchFrobulate<float>(stream, data, out, n, view)); });
    std::printf(
        "\nseed approach (sync pageable copy + lane-divergent cdata[i]): %.3f ms; constmem: %.3f "
        "ms; constmem is %.1fx faster\n",
        seed_ms, ours_ms, seed_ms / ours_ms);
    json.Add("seed_ms", Num(seed_ms));
    json.Add("seed_constmem_ms", Num(ours_ms));
  }
  json.text += "\n}\n";
  if (json_path != nullptr) {
    FILE* f = std::fopen(json_path, "w");
    std::fputs(json.text.c_str(), f);
    std::fclose(f);
  }
  return 0;
}

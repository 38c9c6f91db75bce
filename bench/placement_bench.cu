// SPDX-License-Identifier: Apache-2.0
// Where a lookup table reads fastest: Interpolate over 16 Mi elements with its knots in each
// placement (by value, a constant bank, global memory, shared memory staged per block), for
// warp-uniform reads (every run of 256 elements at one point) and divergent ones (every element
// its own point), at table sizes from 2 to 16,384 knots. Each row is the kernel's time against
// the best placement of its case and against a copy of the same bytes (the memory ceiling); the
// last column says whether Interpolate's choice is within 5% of the best. Its reads depend on the
// data, so it declares them divergent (TableAccess::kDivergent) and its choice cannot depend on
// whether a given input happens to make them warp-uniform: one choice must serve both. Knots come
// from pageable host memory, uploaded once (an attr table).
//
// With --prefix it times instead float32 tables past the 16,384 knots a block stages, device knots
// read at divergent points: each size with its first 16,384 knots staged in shared memory and the
// rest read from global memory (SharedPrefixSource), and read from global memory alone, every
// time against 16,384 knots staged whole; the row Interpolate launches is marked.
//
//   placement_bench [--json FILE] [--prefix]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.cuh"
#include "checks.cuh"
#include "constmem/constmem.cuh"
#include "constmem/testing/gpu_testing.cuh"
#include "interpolate/interpolate_launcher.h"

namespace {

constexpr std::int64_t kElements = std::int64_t{1} << 24;
constexpr int kUniformRun = 256;
// A placement's time is per launch over kBatch back-to-back launches (median of MedianMs's runs),
// the least of kRounds rounds that alternate the placements: differences of a few percent between
// 45-microsecond kernels are otherwise within the spread of single launches.
constexpr int kBatch = 20;
constexpr int kRounds = 3;

// Points in [-1, 1): one per run of `run` elements (run 1: every element its own).
template <class T>
__global__ void FillPoints(T* out, std::int64_t n, int run) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    unsigned x = static_cast<unsigned>(i / run) * 2654435761u;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    out[i] = static_cast<T>(x % 1000000u) * static_cast<T>(2e-6) - T(1);
  }
}

template <class T>
void Run(cudaStream_t stream, Json* json, int* misses) {
  using constmem::Placement;
  T* x = nullptr;
  T* y = nullptr;
  CHECK_CUDA(cudaMalloc(&x, kElements * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&y, kElements * sizeof(T)));
  const double copy_ms = MedianMs(
      stream, [&] { ElementwiseKernel<T><<<132 * 16, 256, 0, stream>>>(x, y, kElements, T(1)); });
  const char* type = sizeof(T) == 4 ? "float32" : "float64";
  std::printf("\n%s, %lld elements; copy ceiling %.3f ms\n", type,
              static_cast<long long>(kElements), copy_ms);
  std::printf("%6s %9s %14s %9s %8s %8s %s\n", "knots", "access", "placement", "ms", "/best",
              "ceiling", "chosen");
  for (constmem::TableAccess access :
       {constmem::TableAccess::kUniform, constmem::TableAccess::kDivergent}) {
    const bool uniform = access == constmem::TableAccess::kUniform;
    FillPoints<T><<<1024, 256, 0, stream>>>(x, kElements, uniform ? kUniformRun : 1);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    for (std::int64_t knots : {2, 16, 128, 1024, 4096, 16384}) {
      std::vector<T> table(knots);
      for (std::int64_t i = 0; i < knots; ++i) table[i] = static_cast<T>((i * 37) % 101) / T(50);
      const constmem::TableView<T> view{table.data(), knots, constmem::SourceKind::kPageableHost,
                                        /*repeats=*/true};
      std::vector<std::pair<Placement, double>> rows;
      for (Placement placement : {Placement::kByValue, Placement::kConstantBank,
                                  Placement::kGlobalMemory, Placement::kSharedMemory}) {
        if (placement == Placement::kByValue && knots * sizeof(T) > constmem::kDefaultByValueBytes)
          continue;
        if (placement == Placement::kConstantBank && knots > 4096) continue;
        rows.emplace_back(placement, 1e30);
      }
      for (int round = 0; round < kRounds; ++round) {
        for (auto& row : rows) {
          const Placement placement = row.first;
          const double ms = MedianMs(stream,
                                     [&] {
                                       for (int b = 0; b < kBatch; ++b) {
                                         CHECK_OK(constmem::ops::LaunchInterpolateWithPlacement<T>(
                                             stream, x, y, kElements, view, -1.0, 1.0, placement));
                                       }
                                     }) /
                            kBatch;
          row.second = std::min(row.second, ms);
        }
      }
      double best = rows[0].second;
      for (const auto& row : rows) best = std::min(best, row.second);
      const Placement chosen =
          constmem::ops::InterpolatePlacement<T>(knots, constmem::SourceKind::kPageableHost);
      double chosen_ms = 0;
      for (const auto& row : rows) {
        if (row.first == chosen) chosen_ms = row.second;
      }
      const bool within = chosen_ms > 0 && chosen_ms <= 1.05 * best;
      if (!within) ++*misses;
      for (const auto& [placement, ms] : rows) {
        const bool is_chosen = placement == chosen;
        std::printf("%6lld %9s %14s %9.4f %8.3f %7.1f%% %s\n", static_cast<long long>(knots),
                    uniform ? "uniform" : "divergent", constmem::PlacementName(placement), ms,
                    ms / best, 100.0 * copy_ms / ms,
                    is_chosen ? (within ? "<- chosen, within 5%" : "<- chosen, MISSES 5%") : "");
        json->Add(std::string(type) + "/" + (uniform ? "uniform" : "divergent") + "/" +
                      std::to_string(knots) + "/" + constmem::PlacementName(placement),
                  "{\"ms\": " + Num(ms) + ", \"over_best\": " + Num(ms / best) + ", \"of_copy\": " +
                      Num(copy_ms / ms) + ", \"chosen\": " + (is_chosen ? "true" : "false") + "}");
      }
    }
  }
  json->Add(std::string(type) + "/copy_ms", Num(copy_ms));
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
}

// float32 knots past the shared-memory budget: a staged prefix against global memory alone, both
// against the budget's knots staged whole. Device knots, so that only the kernel is timed.
void RunPrefix(cudaStream_t stream, Json* json) {
  using constmem::Placement;
  using constmem::ops::InterpolatePrefix;
  constexpr std::int64_t kStagedKnots = 16384;
  constexpr std::int64_t kMostKnots = std::int64_t{1} << 20;
  float* x = nullptr;
  float* y = nullptr;
  float* table = nullptr;
  CHECK_CUDA(cudaMalloc(&x, kElements * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&y, kElements * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&table, kMostKnots * sizeof(float)));
  std::vector<float> knots(kMostKnots);
  for (std::int64_t i = 0; i < kMostKnots; ++i) knots[i] = static_cast<float>((i * 37) % 101) / 50;
  CHECK_CUDA(constmem::testing::CopyToDevice(table, knots.data(), kMostKnots * sizeof(float)));
  FillPoints<float><<<1024, 256, 0, stream>>>(x, kElements, 1);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  struct Row {
    std::int64_t knots;
    const char* reader;
    Placement placement;
    InterpolatePrefix prefix;
    double ms;
  };
  std::vector<Row> rows = {
      {kStagedKnots, "shared", Placement::kSharedMemory, InterpolatePrefix::kAuto, 1e30},
      {kStagedKnots, "global", Placement::kGlobalMemory, InterpolatePrefix::kNever, 1e30}};
  for (std::int64_t knots_count : {16385, 32768, 65536, 262144, 1048576}) {
    rows.push_back(
        {knots_count, "prefix", Placement::kGlobalMemory, InterpolatePrefix::kAlways, 1e30});
    rows.push_back(
        {knots_count, "global", Placement::kGlobalMemory, InterpolatePrefix::kNever, 1e30});
  }
  for (int round = 0; round < kRounds; ++round) {
    for (Row& row : rows) {
      const constmem::TableView<float> view{table, row.knots, constmem::SourceKind::kDevice};
      const double ms = MedianMs(stream,
                                 [&] {
                                   for (int b = 0; b < kBatch; ++b) {
                                     CHECK_OK(constmem::ops::LaunchInterpolateWithPlacement<float>(
                                         stream, x, y, kElements, view, -1.0, 1.0, row.placement,
                                         nullptr, row.prefix));
                                   }
                                 }) /
                        kBatch;
      row.ms = std::min(row.ms, ms);
    }
  }
  const double base = rows[0].ms;
  std::printf(
      "\nfloat32, %lld elements, device knots, divergent points: past the %lld knots a "
      "block stages\n",
      static_cast<long long>(kElements), static_cast<long long>(kStagedKnots));
  std::printf("%8s %7s %9s %9s %s\n", "knots", "reader", "ms", "/16384", "");
  for (const Row& row : rows) {
    // What LaunchInterpolate does: shared memory up to the budget, then the prefix where it pays.
    const bool prefix_chosen =
        constmem::ops::InterpolateStagesPrefix<float>(row.knots, constmem::SourceKind::kDevice);
    const bool chosen = row.knots == kStagedKnots
                            ? row.placement == Placement::kSharedMemory
                            : (row.prefix == InterpolatePrefix::kAlways) == prefix_chosen;
    std::printf("%8lld %7s %9.4f %9.3f %s\n", static_cast<long long>(row.knots), row.reader, row.ms,
                row.ms / base, chosen ? "<- chosen" : "");
    json->Add("float32/prefix/" + std::to_string(row.knots) + "/" + row.reader,
              "{\"ms\": " + Num(row.ms) + ", \"over_staged_16384\": " + Num(row.ms / base) +
                  ", \"chosen\": " + (chosen ? "true" : "false") + "}");
  }
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaFree(table));
}

}  // namespace

int main(int argc, char** argv) {
  if (!HasGpuOrSayNone("placement_bench")) return 0;
  const char* json_path = nullptr;
  bool prefix = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json_path = argv[++i];
    } else if (std::strcmp(argv[i], "--prefix") == 0) {
      prefix = true;
    } else {
      std::fprintf(stderr, "usage: placement_bench [--json FILE] [--prefix]\n");
      return 2;
    }
  }
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  Json json;
  json.Add("device", "\"" + std::string(prop.name) + "\"");
  if (prefix) {
    RunPrefix(stream, &json);
  } else {
    int misses = 0;
    Run<float>(stream, &json, &misses);
    Run<double>(stream, &json, &misses);
    json.Add("choices_missing_5_percent", std::to_string(misses));
    std::printf("\nstrategy's choice within 5%% of the best placement: %s (%d misses)\n",
                misses == 0 ? "every case" : "NOT every case", misses);
  }
  if (json_path != nullptr) {
    FILE* f = std::fopen(json_path, "w");
    if (f == nullptr) return 1;
    std::fprintf(f, "%s\n}\n", json.text.c_str());
    std::fclose(f);
  }
  return 0;
}

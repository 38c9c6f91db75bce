// SPDX-License-Identifier: Apache-2.0
// What a call captured into a CUDA graph costs: device microseconds per call for 100 calls of an
// op captured into one graph and replayed, against the same calls made eagerly, and against a
// "bare" graph that holds only the captured kernel nodes (the same kernels with the same
// parameters, added with cudaGraphAddKernelNode: what a hand-built graph of the kernel costs).
// Every table form: a small host table (by value), a device table (read in place), a large host
// table (the graph's buffer and its wait node); launch-bound (1 Ki elements) and kernel-bound
// (16 Mi elements) sizes.
//
//   capture_bench [--json FILE]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.cuh"
#include "checks.cuh"
#include "constmem/constmem.cuh"
#include "constmem/testing/gpu_testing.cuh"
#include "fir_filter/fir_filter_launcher.h"
#include "frobulate/frobulate_launcher.h"
#include "polyval/polyval_launcher.h"

namespace {

constexpr int kCalls = 100;
constexpr int kReplays = 10;

__global__ void Busy(long long ns) { constmem::testing::SpinFor(ns); }

// Device microseconds per call of `calls` (kCalls calls), enqueued behind a busy kernel so that
// they run back to back at device speed.
double EagerUs(cudaStream_t stream, const std::function<void()>& calls) {
  const double ms = MedianMs(stream, [&] {
    Busy<<<1, 1, 0, stream>>>(3'000'000);
    calls();
  });
  return (ms - 3.0) * 1000.0 / kCalls;
}

double ReplayUs(cudaStream_t stream, cudaGraphExec_t exec) {
  const double ms = MedianMs(stream, [&] {
    for (int r = 0; r < kReplays; ++r) CHECK_CUDA(cudaGraphLaunch(exec, stream));
  });
  return ms * 1000.0 / (kReplays * kCalls);
}

// The captured graph's kernel nodes alone, chained in capture order.
cudaGraph_t BareKernels(cudaGraph_t captured, int* kernels) {
  std::size_t count = 0;
  CHECK_CUDA(cudaGraphGetNodes(captured, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  CHECK_CUDA(cudaGraphGetNodes(captured, nodes.data(), &count));
  cudaGraph_t bare = nullptr;
  CHECK_CUDA(cudaGraphCreate(&bare, 0));
  cudaGraphNode_t previous = nullptr;
  *kernels = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    CHECK_CUDA(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    cudaKernelNodeParams params{};
    CHECK_CUDA(cudaGraphKernelNodeGetParams(node, &params));
    cudaGraphNode_t added = nullptr;
    CHECK_CUDA(cudaGraphAddKernelNode(&added, bare, previous != nullptr ? &previous : nullptr,
                                      previous != nullptr ? 1 : 0, &params));
    previous = added;
    ++*kernels;
  }
  return bare;
}

struct Row {
  std::string name;
  double eager_us, captured_us, bare_us;
  int nodes, kernels;
};

Row Measure(const std::string& name, cudaStream_t stream, const std::function<void()>& call) {
  auto calls = [&] {
    for (int i = 0; i < kCalls; ++i) call();
  };
  Row row{name, EagerUs(stream, calls), 0, 0, 0, 0};
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  calls();
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  std::size_t nodes = 0;
  CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
  row.nodes = static_cast<int>(nodes);
  cudaGraph_t bare = BareKernels(graph, &row.kernels);
  cudaGraphExec_t exec = nullptr, bare_exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphInstantiate(&bare_exec, bare, 0));
  // Alternated, so that clocks and caches treat both alike.
  row.captured_us = ReplayUs(stream, exec);
  row.bare_us = ReplayUs(stream, bare_exec);
  row.captured_us = std::min(row.captured_us, ReplayUs(stream, exec));
  row.bare_us = std::min(row.bare_us, ReplayUs(stream, bare_exec));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphExecDestroy(bare_exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaGraphDestroy(bare));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace constmem;
  using namespace constmem::ops;
  const char* json_path = argc == 3 && std::strcmp(argv[1], "--json") == 0 ? argv[2] : nullptr;
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  constexpr std::int64_t kLarge = 16 << 20;
  float *x = nullptr, *y = nullptr, *device_coeffs = nullptr;
  CHECK_CUDA(cudaMalloc(&x, kLarge * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&y, kLarge * sizeof(float)));
  CHECK_CUDA(cudaMemset(x, 0, kLarge * sizeof(float)));
  std::vector<float> coeffs(2000), taps(63);
  for (std::size_t i = 0; i < coeffs.size(); ++i) coeffs[i] = 1.0f / static_cast<float>(i + 2);
  for (std::size_t i = 0; i < taps.size(); ++i) taps[i] = 1.0f / static_cast<float>(i + 1);
  std::vector<std::int32_t> table(100, 3);
  CHECK_CUDA(cudaMalloc(&device_coeffs, coeffs.size() * sizeof(float)));
  CHECK_CUDA(
      constmem::testing::CopyToDevice(device_coeffs, coeffs.data(), coeffs.size() * sizeof(float)));

  std::vector<Row> rows;
  for (const std::int64_t n : {std::int64_t{1024}, kLarge}) {
    const std::string size = n == 1024 ? "1Ki" : "16Mi";
    rows.push_back(Measure("polyval deg16 host (by value), " + size, stream, [&] {
      CHECK_OK(
          LaunchPolyval<float>(stream, x, y, n, {coeffs.data(), 17, SourceKind::kPageableHost}));
    }));
    rows.push_back(Measure("polyval deg299 device (in place), " + size, stream, [&] {
      CHECK_OK(LaunchPolyval<float>(stream, x, y, n, {device_coeffs, 300, SourceKind::kDevice}));
    }));
    rows.push_back(Measure("polyval deg1999 device (in place), " + size, stream, [&] {
      CHECK_OK(LaunchPolyval<float>(stream, x, y, n, {device_coeffs, 2000, SourceKind::kDevice}));
    }));
    rows.push_back(Measure("polyval deg1999 host (graph buffer), " + size, stream, [&] {
      CHECK_OK(
          LaunchPolyval<float>(stream, x, y, n, {coeffs.data(), 2000, SourceKind::kPageableHost}));
    }));
    rows.push_back(Measure("frobulate 100 host (by value), " + size, stream, [&] {
      CHECK_OK(
          LaunchFrobulate<float>(stream, x, y, n, {table.data(), 100, SourceKind::kPageableHost}));
    }));
    const FirShape shape = MakeFirShape(n / 1024, 1024, 63, FirPadding::kSame);
    rows.push_back(Measure("fir_filter 63 host (by value), " + size, stream, [&] {
      CHECK_OK(LaunchFirFilter<float>(stream, x, y, shape,
                                      {taps.data(), 63, SourceKind::kPageableHost}));
    }));
  }

  std::printf("%-44s %9s %9s %9s %7s %6s %12s\n", "us per call", "eager", "captured", "bare",
              "nodes", "kern.", "captured/bare");
  Json json;
  std::string list = "[";
  for (const Row& r : rows) {
    std::printf("%-44s %9.3f %9.3f %9.3f %7d %6d %12.3fx\n", r.name.c_str(), r.eager_us,
                r.captured_us, r.bare_us, r.nodes, r.kernels, r.captured_us / r.bare_us);
    list += std::string(list.size() > 1 ? "," : "") + "\n  {\"case\": \"" + r.name +
            "\", \"eager_us\": " + Num(r.eager_us) + ", \"captured_us\": " + Num(r.captured_us) +
            ", \"bare_us\": " + Num(r.bare_us) + ", \"nodes\": " + std::to_string(r.nodes) +
            ", \"captured_over_bare\": " + Num(r.captured_us / r.bare_us) + "}";
  }
  json.Add("cases", list + "\n ]");
  if (json_path != nullptr) {
    FILE* f = std::fopen(json_path, "w");
    std::fprintf(f, "%s\n}\n", json.text.c_str());
    std::fclose(f);
  }
  return 0;
}

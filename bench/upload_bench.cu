// SPDX-License-Identifier: Apache-2.0
// Per-call cost of getting a table to a kernel: bare launch, by-value parameters, and upload +
// launch through raw cudaMemcpyToSymbolAsync against constmem, from device, pinned and pageable
// sources, on one stream and alternating two. Prints a table and writes JSON.
//
//   upload_bench [--calls N] [--json FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.cuh"
#include "checks.cuh"
#include "constmem/constmem.cuh"
#include "constmem/testing/gpu_testing.cuh"

namespace bench {
namespace {

struct Timing {
  double stream_us = 0;     // device time per call, back to back, with the host out of the way
  double host_us = 0;       // host time to enqueue one call
  bool host_bound = false;  // enqueueing outlasted the gate: stream_us then includes host time
};

constexpr long long kGateNs = 30'000'000;

// Holds the stream while the host enqueues the calls to be timed, so that they then run back to
// back at device speed and the events measure the device, not the host.
__global__ void Gate(long long nanoseconds) { constmem::testing::SpinFor(nanoseconds); }

struct Row {
  std::string name, source;
  std::size_t bytes;
  int streams;
  Timing timing;
  double ratio = 0;  // against the raw CUDA row of the same size, source and streams
};

using Enqueue = std::function<void(cudaStream_t, int)>;

struct EmptyReader {
  __device__ std::int32_t operator[](int) const { return 1; }
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Timing TimeCalls(cudaStream_t a, cudaStream_t b, int streams, int calls, const Enqueue& enqueue) {
  for (int i = 0; i < 50; ++i) enqueue(i % streams ? b : a, i);
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaEvent_t start, stop, joined;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
  std::vector<double> stream_us, host_us;
  bool host_bound = false;
  for (int rep = 0; rep < 7; ++rep) {
    Gate<<<1, 1, 0, a>>>(kGateNs);
    CHECK_CUDA(cudaEventRecord(start, a));
    CHECK_CUDA(cudaStreamWaitEvent(b, start, 0));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) enqueue(i % streams ? b : a, i);
    const auto t1 = std::chrono::steady_clock::now();
    host_bound |= std::chrono::duration<double, std::nano>(t1 - t0).count() > 0.8 * kGateNs;
    CHECK_CUDA(cudaEventRecord(joined, b));
    CHECK_CUDA(cudaStreamWaitEvent(a, joined, 0));
    CHECK_CUDA(cudaEventRecord(stop, a));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    stream_us.push_back(ms * 1e3 / calls);
    host_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaEventDestroy(joined);
  return {Median(stream_us), Median(host_us), host_bound};
}

template <std::size_t kEntries>
Enqueue ByValueLaunch(const std::vector<std::int32_t>& host, long long* out) {
  return [&host, out](cudaStream_t stream, int) {
    auto table = std::make_unique<constmem::ByValueTable<std::int32_t, kEntries>>();
    if (!constmem::FillByValueTable(host.data(), kEntries, table.get()).ok()) std::exit(1);
    Consume<<<1, 32, 0, stream>>>(*table, static_cast<int>(kEntries), out);
  };
}

const char* SourceName(constmem::SourceKind kind) {
  switch (kind) {
    case constmem::SourceKind::kDevice:
      return "device";
    case constmem::SourceKind::kPinnedHost:
      return "pinned";
    case constmem::SourceKind::kPageableHost:
      return "pageable";
  }
  return "?";
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  using namespace bench;
  int calls = 500;
  const char* json_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--calls") && i + 1 < argc) calls = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
  }
  if (!HasGpuOrSayNone("upload_bench")) return 0;
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t a, b;
  CHECK_CUDA(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  long long* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, sizeof(long long)));

  constexpr int kMaxEntries = 16384;
  constexpr int kVariants = 64;  // distinct tables, so that no upload is skipped as unchanged
  std::vector<std::int32_t> pageable(kVariants * kMaxEntries);
  for (std::size_t i = 0; i < pageable.size(); ++i)
    pageable[i] = static_cast<std::int32_t>(i * 2654435761u);
  std::int32_t *pinned = nullptr, *device = nullptr;
  CHECK_CUDA(cudaHostAlloc(&pinned, pageable.size() * sizeof(std::int32_t), cudaHostAllocDefault));
  std::memcpy(pinned, pageable.data(), pageable.size() * sizeof(std::int32_t));
  CHECK_CUDA(cudaMalloc(&device, pageable.size() * sizeof(std::int32_t)));
  CHECK_CUDA(
      cudaMemcpy(device, pinned, pageable.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice));

  std::vector<Row> rows;
  rows.push_back({"bare launch", "-", 0, 1, TimeCalls(a, b, 1, calls, [&](cudaStream_t s, int) {
                    Consume<<<1, 32, 0, s>>>(EmptyReader{}, 1, out);
                  })});
  rows.push_back({"by-value launch", "host", 400, 1,
                  TimeCalls(a, b, 1, calls, ByValueLaunch<100>(pageable, out))});
  rows.push_back({"by-value launch", "host", 4096, 1,
                  TimeCalls(a, b, 1, calls, ByValueLaunch<1024>(pageable, out))});
  rows.push_back({"by-value launch", "host", 32000, 1,
                  TimeCalls(a, b, 1, calls, ByValueLaunch<8000>(pageable, out))});

  for (int streams : {1, 2}) {
    for (int entries : {100, 1024, 8192, 16384}) {
      for (auto kind : {constmem::SourceKind::kDevice, constmem::SourceKind::kPinnedHost,
                        constmem::SourceKind::kPageableHost}) {
        const std::int32_t* base = kind == constmem::SourceKind::kDevice       ? device
                                   : kind == constmem::SourceKind::kPinnedHost ? pinned
                                                                               : pageable.data();
        const cudaMemcpyKind copy_kind = kind == constmem::SourceKind::kDevice
                                             ? cudaMemcpyDeviceToDevice
                                             : cudaMemcpyHostToDevice;
        const auto raw = TimeCalls(a, b, streams, calls, [&](cudaStream_t s, int i) {
          CHECK_CUDA(
              RawUploadAndLaunch(s, base + (i % kVariants) * kMaxEntries, entries, copy_kind, out));
        });
        const auto ours = TimeCalls(a, b, streams, calls, [&](cudaStream_t s, int i) {
          const auto status =
              ConstmemUploadAndLaunch(s, base + (i % kVariants) * kMaxEntries, entries, kind,
                                      /*dedupe=*/false, out);
          if (!status.ok()) {
            std::fprintf(stderr, "%s\n", status.ToString().c_str());
            std::exit(1);
          }
        });
        const std::size_t bytes = entries * sizeof(std::int32_t);
        rows.push_back(
            {"raw cudaMemcpyToSymbolAsync + launch", SourceName(kind), bytes, streams, raw, 1.0});
        rows.push_back({"constmem upload + launch", SourceName(kind), bytes, streams, ours,
                        ours.stream_us / raw.stream_us});
      }
    }
  }
  // The same pageable table every call: constmem skips the copy, raw CUDA cannot.
  for (int entries : {1024, 16384}) {
    const auto raw = TimeCalls(a, b, 1, calls, [&](cudaStream_t s, int) {
      CHECK_CUDA(RawUploadAndLaunch(s, pageable.data(), entries, cudaMemcpyHostToDevice, out));
    });
    const auto ours = TimeCalls(a, b, 1, calls, [&](cudaStream_t s, int) {
      if (!ConstmemUploadAndLaunch(s, pageable.data(), entries, constmem::SourceKind::kPageableHost,
                                   true, out)
               .ok())
        std::exit(1);
    });
    const std::size_t bytes = entries * sizeof(std::int32_t);
    rows.push_back({"raw upload + launch, unchanged table", "pageable", bytes, 1, raw, 1.0});
    rows.push_back({"constmem, unchanged table (skipped)", "pageable", bytes, 1, ours,
                    ours.stream_us / raw.stream_us});
  }

  int driver = 0;
  cudaDriverGetVersion(&driver);
  std::printf("device: %s (sm_%d%d), driver API %d, runtime %d, %d calls per timing, median of 7\n",
              prop.name, prop.major, prop.minor, driver, CUDART_VERSION, calls);
  std::printf("%-40s %-9s %7s %3s %10s %9s %9s\n", "what", "source", "bytes", "str", "stream_us",
              "host_us", "vs_raw");
  for (const auto& r : rows) {
    char ratio[16] = "-";
    if (r.ratio > 0) std::snprintf(ratio, sizeof(ratio), "%.3fx", r.ratio);
    std::printf("%-40s %-9s %7zu %3d %10.2f %9.2f %9s%s\n", r.name.c_str(), r.source.c_str(),
                r.bytes, r.streams, r.timing.stream_us, r.timing.host_us, ratio,
                r.timing.host_bound ? " (host-bound)" : "");
  }
  if (json_path != nullptr) {
    FILE* f = std::fopen(json_path, "w");
    std::fprintf(
        f, "{\"device\": \"%s\", \"driver\": %d, \"runtime\": %d, \"calls\": %d, \"rows\": [\n",
        prop.name, driver, CUDART_VERSION, calls);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      std::fprintf(f,
                   "  {\"what\": \"%s\", \"source\": \"%s\", \"bytes\": %zu, \"streams\": %d, "
                   "\"stream_us\": %.3f, \"host_us\": %.3f, \"ratio_vs_raw\": %.4f, "
                   "\"host_bound\": %s}%s\n",
                   r.name.c_str(), r.source.c_str(), r.bytes, r.streams, r.timing.stream_us,
                   r.timing.host_us, r.ratio, r.timing.host_bound ? "true" : "false",
                   i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// Host time per call: what TensorFlow's executor thread pays to enqueue one small Frobulate (1 Ki
// float32 elements, 100-entry table) for each way a table arrives, against a bare kernel launch
// (what tf.add costs underneath) and against the CUDA runtime calls the launcher makes. Batches of
// 100 calls start on a drained stream, so the figure is enqueue cost, not device time.
//
//   launch_overhead [--json FILE]
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "checks.cuh"
#include "constmem/constmem.cuh"
#include "constmem/testing/gpu_testing.cuh"
#include "frobulate/frobulate_launcher.h"

namespace {

constexpr int kElements = 1024;
constexpr int kTable = 100;
constexpr int kBatch = 100;
constexpr int kBatches = 31;

__global__ void AddKernel(const float* in, float* out, int n, float s) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + s;
}

template <std::size_t Capacity>
__global__ void ByValueKernel(const float* in, float* out, int n,
                              const __grid_constant__ constmem::ByValueTable<float, Capacity> t) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + t[0];
}

__global__ void Busy(long long nanoseconds) { constmem::testing::SpinFor(nanoseconds); }

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Median over batches of the host microseconds per call. With `behind_work`, each batch queues
// behind a 2 ms kernel, as ops do when the GPU is busy; otherwise every launch finds it idle.
double HostUs(cudaStream_t stream, const std::function<void()>& call, bool behind_work = false) {
  for (int i = 0; i < kBatch; ++i) call();
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> us;
  for (int b = 0; b < kBatches; ++b) {
    if (behind_work) Busy<<<1, 1, 0, stream>>>(2'000'000);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    CHECK_CUDA(cudaStreamSynchronize(stream));
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kBatch);
  }
  return Median(us);
}

// Device microseconds per call with the calls back to back: the stream is held by a 2 ms kernel
// while they are enqueued, then they run at device speed.
double DeviceUs(cudaStream_t stream, const std::function<void()>& call) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<double> us;
  for (int b = 0; b < 5; ++b) {
    Busy<<<1, 1, 0, stream>>>(2'000'000);
    CHECK_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < kBatch; ++i) call();
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    us.push_back(ms * 1e3 / kBatch);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return Median(us);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace constmem;
  using namespace constmem::ops;
  const char* json_path = nullptr;
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--json")) json_path = argv[i + 1];
  if (!HasGpuOrSayNone("launch_overhead")) return 0;
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float *in = nullptr, *out = nullptr;
  std::int32_t* device_table = nullptr;
  CHECK_CUDA(cudaMalloc(&in, kElements * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&out, kElements * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&device_table, kTable * sizeof(std::int32_t)));
  std::vector<std::int32_t> table(kTable);
  for (int j = 0; j < kTable; ++j) table[j] = j - 50;
  CHECK_CUDA(
      constmem::testing::CopyToDevice(device_table, table.data(), sizeof(std::int32_t) * kTable));
  cudaEvent_t event;
  CHECK_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  ByValueTable<float, 1000> small_param;
  ByValueTable<float, 1024> large_param;
  CHECK_OK(FillByValueTable(table.data(), kTable, &small_param));
  CHECK_OK(FillByValueTable(table.data(), kTable, &large_param));

  const TableView<std::int32_t> host{table.data(), kTable, SourceKind::kPageableHost};
  const TableView<std::int32_t> attr{table.data(), kTable, SourceKind::kPageableHost,
                                     /*repeats=*/true};
  const TableView<std::int32_t> device{device_table, kTable, SourceKind::kDevice};
  int scratch_device = 0;
  unsigned long long scratch_id = 0;
  // The driver's own launch, as TensorFlow's StreamExecutor makes it, for comparison.
  using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                unsigned, unsigned, CUstream, void**, void**);
  LaunchFn driver_launch = nullptr;
  cudaDriverEntryPointQueryResult found;
  CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuLaunchKernel",
                                              reinterpret_cast<void**>(&driver_launch), 12000,
                                              cudaEnableDefault, &found));
  cudaFunction_t add_function;
  CHECK_CUDA(cudaGetFuncBySymbol(&add_function, reinterpret_cast<const void*>(AddKernel)));
  int n = kElements;
  float s = 1.0f;
  void* add_args[] = {&in, &out, &n, &s};
  // A stream created through the driver API, as TensorFlow's StreamExecutor creates its streams:
  // the CUDA runtime did not create it.
  using StreamCreateFn = CUresult (*)(CUstream*, unsigned);
  StreamCreateFn driver_stream_create = nullptr;
  CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuStreamCreate",
                                              reinterpret_cast<void**>(&driver_stream_create),
                                              12000, cudaEnableDefault, &found));
  CUstream foreign = nullptr;
  if (driver_stream_create(&foreign, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuStreamCreate failed\n");
    return 1;
  }
  auto driver_add = [&](cudaStream_t on) {
    driver_launch(reinterpret_cast<CUfunction>(add_function), 4, 1, 1, 256, 1, 1, 0, on, add_args,
                  nullptr);
  };
  struct Case {
    const char* name;
    std::function<void()> call;
    bool behind_work = false;
    cudaStream_t on = nullptr;  // the stream the call uses, when not `stream`
  };
  const std::vector<Case> cases = {
      {"bare launch, 1 Ki elements (what tf.add enqueues)",
       [&] { AddKernel<<<4, 256, 0, stream>>>(in, out, kElements, 1.0f); }},
      {"bare launch, queued behind work",
       [&] { AddKernel<<<4, 256, 0, stream>>>(in, out, kElements, 1.0f); }, true},
      {"cudaLaunchKernel", [&] { cudaLaunchKernel(AddKernel, 4, 256, add_args, 0, stream); }},
      {"cuLaunchKernel (driver API, function looked up once)", [&] { driver_add(stream); }},
      {"cuLaunchKernel, queued behind work", [&] { driver_add(stream); }, true},
      {"launch with a 4,004 B by-value parameter",
       [&] { ByValueKernel<<<4, 256, 0, stream>>>(in, out, kElements, small_param); }},
      {"launch with a 4,100 B by-value parameter (over 4 KiB)",
       [&] { ByValueKernel<<<4, 256, 0, stream>>>(in, out, kElements, large_param); }},
      {"Frobulate, host table (by value)",
       [&] { CHECK_OK(LaunchFrobulate<float>(stream, in, out, kElements, host)); }},
      {"Frobulate, attr table (by value)",
       [&] { CHECK_OK(LaunchFrobulate<float>(stream, in, out, kElements, attr)); }},
      {"Frobulate, attr table in a constant bank (unchanged: copy skipped)",
       [&] {
         CHECK_OK(LaunchFrobulateWithPlacement<float>(stream, in, out, kElements, attr,
                                                      Placement::kConstantBank));
       }},
      {"bare launch on a driver-created stream",
       [&] { AddKernel<<<4, 256, 0, foreign>>>(in, out, kElements, 1.0f); }, false, foreign},
      {"cuLaunchKernel on a driver-created stream", [&] { driver_add(foreign); }, false, foreign},
      {"Frobulate, attr table (by value), on a driver-created stream",
       [&] { CHECK_OK(LaunchFrobulate<float>(foreign, in, out, kElements, attr)); }, false,
       foreign},
      {"Frobulate, device table copied into a constant bank",
       [&] {
         CHECK_OK(LaunchFrobulateWithPlacement<float>(stream, in, out, kElements, device,
                                                      Placement::kConstantBank));
       }},
      {"Frobulate, device table read in place (automatic choice)",
       [&] { CHECK_OK(LaunchFrobulate<float>(stream, in, out, kElements, device)); }},
      {"Frobulate, device table read in place, queued behind work",
       [&] { CHECK_OK(LaunchFrobulate<float>(stream, in, out, kElements, device)); }, true},
  };
  // The runtime calls Frobulate's launcher makes besides the launch: host time only.
  const std::vector<Case> runtime_calls = {
      {"cudaStreamGetDevice", [&] { cudaStreamGetDevice(stream, &scratch_device); }},
      {"cudaGetDevice", [&] { cudaGetDevice(&scratch_device); }},
      {"cudaStreamGetId", [&] { cudaStreamGetId(stream, &scratch_id); }},
      {"cudaEventRecord", [&] { cudaEventRecord(event, stream); }},
  };
  std::printf(
      "microseconds per call: host = enqueue time, median of %d batches of %d calls on a drained "
      "stream;\ndevice = stream time with the calls back to back (kernel calls only)\n",
      kBatches, kBatch);
  std::printf("  %-66s %7s %7s\n", "what", "host", "device");
  std::string host_rows, device_rows;
  auto add_row = [](std::string& rows, const char* name, double us) {
    rows += std::string(rows.empty() ? "" : ",") + "\n  \"" + name + "\": " + std::to_string(us);
  };
  const double bare = HostUs(stream, cases[0].call);
  for (const Case& c : cases) {
    cudaStream_t on = c.on != nullptr ? c.on : stream;
    const double us = &c == &cases[0] ? bare : HostUs(on, c.call, c.behind_work);
    const double device_us = DeviceUs(on, c.call);
    std::printf("  %-66s %7.2f %7.3f  (host %.2fx bare launch)\n", c.name, us, device_us,
                us / bare);
    add_row(host_rows, c.name, us);
    add_row(device_rows, c.name, device_us);
  }
  for (const Case& c : runtime_calls) {
    const double us = HostUs(stream, c.call);
    std::printf("  %-66s %7.2f %7s  (host %.2fx bare launch)\n", c.name, us, "-", us / bare);
    add_row(host_rows, c.name, us);
  }
  const std::string json =
      "{\n \"host_us\": {" + host_rows + "\n },\n \"device_us\": {" + device_rows + "\n }\n}\n";
  if (json_path != nullptr) {
    FILE* f = std::fopen(json_path, "w");
    std::fputs(json.c_str(), f);
    std::fclose(f);
  }
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// The core under conditions that must neither hang nor poison later calls: CUDA graph capture on
// the lease's stream and on another thread, a thread acquiring what it already holds, failed CUDA
// calls (through fault injection), a slow stream in front of the staging pool, and the stream's
// device as the driver reports it. Every test skips itself where no GPU is present.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "constmem/constmem.cuh"
#include "test_support.cuh"

CONSTMEM_DEFINE_BANK(reliability_bank, std::int32_t, 256, 4);
CONSTMEM_DEFINE_BANK(lonely_bank, std::int32_t, 256, 1);

namespace constmem {
namespace {

using testing::DeviceBuffer;
using testing::SpinFor;
using testing::Stream;

template <class Reader>
__global__ void CopyOut(Reader table, int n, std::int32_t* out) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = table[i];
}

__global__ void Spin(long long ns) { SpinFor(ns); }
__global__ void AddOne(int* value) { *value += 1; }

// Holds a stream until the host opens it (or `most_ns` pass, so that a failure cannot hang).
__global__ void SpinUntilOpen(const volatile int* open, long long most_ns) {
  const unsigned long long start = testing::GlobalTimerNs();
  while (*open == 0 &&
         testing::GlobalTimerNs() - start < static_cast<unsigned long long>(most_ns)) {
  }
}

// A flag in mapped host memory that SpinUntilOpen reads: a kernel runs exactly until the host has
// checked what it needs to, with no bound on the host's own time.
class HostGate {
 public:
  HostGate() {
    if (cudaHostAlloc(&flag_, sizeof(int), cudaHostAllocMapped) != cudaSuccess ||
        cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flag_), flag_, 0) !=
            cudaSuccess) {
      ADD_FAILURE() << "no mapped host memory for the gate";
      return;
    }
    *flag_ = 0;
  }
  ~HostGate() { cudaFreeHost(flag_); }
  HostGate(const HostGate&) = delete;
  HostGate& operator=(const HostGate&) = delete;
  bool ok() const { return device_flag_ != nullptr; }
  const int* device_flag() const { return device_flag_; }
  void Open() { __atomic_store_n(flag_, 1, __ATOMIC_RELEASE); }

 private:
  int* flag_ = nullptr;
  int* device_flag_ = nullptr;
};

// Fails the test and ends the process if `body` has not returned within `seconds`: a hang must be
// a failure, not a stuck CI job.
template <class Body>
void WithinSeconds(int seconds, const char* what, Body body) {
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int i = 0; i < seconds * 10 && !done.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!done.load()) {
      std::fprintf(stderr, "HANG: %s did not return within %d s\n", what, seconds);
      std::_Exit(3);
    }
  });
  body();
  done.store(true);
  watchdog.join();
}

std::vector<std::int32_t> Table(int n, int seed) {
  std::mt19937 rng(seed);
  std::vector<std::int32_t> table(n);
  for (auto& v : table) v = static_cast<std::int32_t>(rng() % 2000000) - 1000000;
  return table;
}

// A pageable upload read back by a kernel: the end-to-end check that the bank still works.
template <class BankT, class Reader>
std::vector<std::int32_t> PageableRoundTrip(BankT& bank, cudaStream_t stream,
                                            const std::vector<std::int32_t>& table,
                                            Status* status) {
  const int n = static_cast<int>(table.size());
  DeviceBuffer<std::int32_t> out(n);
  Lease<std::int32_t> lease;
  *status = bank.Acquire(stream, n, table.data(), &lease);
  if (status->ok()) *status = lease.UploadFromPageableHost(table.data(), n);
  if (status->ok()) CopyOut<<<1, 256, 0, stream>>>(Reader{lease.offset()}, n, out.get());
  const Status released = lease.Release();
  if (status->ok()) *status = released;
  cudaStreamSynchronize(stream);
  return out.Read();
}

std::vector<std::int32_t> RoundTrip(cudaStream_t stream, const std::vector<std::int32_t>& table) {
  Status status;
  auto seen = PageableRoundTrip<Bank<std::int32_t>, reliability_bank_reader>(
      reliability_bank(), stream, table, &status);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return seen;
}

TEST(Capture, ACapturingStreamIsRefusedAndLeavesNoState) {
  REQUIRE_GPU();
  Stream s, t;
  const auto table = Table(300, 1);
  EXPECT_EQ(RoundTrip(s, table), table);  // a plain lease on s first
  ASSERT_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  Lease<std::int32_t> lease;
  const Status refused = reliability_bank().Acquire(s, 300, table.data(), &lease);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.ToString();
  EXPECT_NE(refused.message().find("capturing"), std::string::npos);
  EXPECT_FALSE(lease.active());
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(s, &graph));
  cudaGraphDestroy(graph);
  EXPECT_EQ(reliability_bank().ClearQuarantine(0), 0) << "a refused Acquire leaves no state";
  // A capture that had recorded slot or staging events would break every later pageable upload.
  const auto other = Table(300, 2);
  EXPECT_EQ(RoundTrip(t, other), other);
  EXPECT_EQ(RoundTrip(s, table), table);
}

TEST(Capture, ALeaseTakenBeforeCaptureCannotUploadInsideIt) {
  REQUIRE_GPU();
  Stream s, t;
  const auto table = Table(100, 3);
  Lease<std::int32_t> lease;
  ASSERT_OK(reliability_bank().Acquire(s, 100, nullptr, &lease));
  ASSERT_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  EXPECT_EQ(lease.UploadFromPageableHost(table.data(), 100).code(),
            StatusCode::kFailedPrecondition);
  const Status released = lease.Release();
  EXPECT_EQ(released.code(), StatusCode::kFailedPrecondition) << released.ToString();
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(s, &graph)) << "no event may be recorded into the capture";
  cudaGraphDestroy(graph);
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_GE(reliability_bank().ClearQuarantine(0), 1);
  EXPECT_EQ(RoundTrip(t, table), table);
}

TEST(Capture, AGlobalCaptureOnAnotherThreadIsNotInvalidated) {
  REQUIRE_GPU();
  Stream capturing, t;
  DeviceBuffer<int> counter(1);
  const auto small = Table(700, 4);
  const auto big = Table(1024, 5);  // may need a new pinned staging buffer
  DeviceBuffer<std::int32_t> out_small(700), out_big(1024);
  ASSERT_CUDA(cudaDeviceSynchronize());
  std::atomic<int> phase{0};
  cudaError_t end_result = cudaErrorUnknown;
  std::thread capturer([&] {
    cudaSetDevice(0);
    cudaStreamBeginCapture(capturing, cudaStreamCaptureModeGlobal);
    AddOne<<<1, 1, 0, capturing>>>(counter.get());
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
    cudaGraph_t graph = nullptr;
    end_result = cudaStreamEndCapture(capturing, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
  });
  while (phase.load() != 1) std::this_thread::yield();
  // Only the core's calls run while the capture is open: its event queries and pinned allocations
  // are "unsafe" calls that a global capture elsewhere would turn into errors, invalidating it.
  Status statuses[2];
  int i = 0;
  for (const auto* table : {&small, &big}) {
    const int n = static_cast<int>(table->size());
    Lease<std::int32_t> lease;
    Status& status = statuses[i];
    status = reliability_bank().Acquire(t, n, table->data(), &lease);
    if (status.ok()) status = lease.UploadFromPageableHost(table->data(), n);
    if (status.ok()) {
      CopyOut<<<1, 256, 0, t>>>(reliability_bank_reader{lease.offset()}, n,
                                (i == 0 ? out_small : out_big).get());
    }
    const Status released = lease.Release();
    if (status.ok()) status = released;
    ++i;
  }
  phase.store(2);
  capturer.join();
  EXPECT_EQ(end_result, cudaSuccess) << cudaGetErrorString(end_result);
  EXPECT_TRUE(statuses[0].ok()) << statuses[0].ToString();
  EXPECT_TRUE(statuses[1].ok()) << statuses[1].ToString();
  cudaStreamSynchronize(t);
  EXPECT_EQ(out_small.Read(), small);
  EXPECT_EQ(out_big.Read(), big);
}

TEST(Deadlock, ReacquiringHeldContentTakesAnotherRun) {
  REQUIRE_GPU();
  Stream s;
  const auto table = Table(200, 6);
  WithinSeconds(20, "a second Acquire of held content", [&] {
    Lease<std::int32_t> a, b;
    ASSERT_OK(reliability_bank().Acquire(s, 200, table.data(), &a));
    ASSERT_OK(a.UploadFromPageableHost(table.data(), 200));
    ASSERT_OK(reliability_bank().Acquire(s, 200, table.data(), &b));
    EXPECT_NE(a.first_slot(), b.first_slot());
    ASSERT_OK(b.UploadFromPageableHost(table.data(), 200));
    DeviceBuffer<std::int32_t> out(200);
    CopyOut<<<1, 256, 0, s>>>(reliability_bank_reader{b.offset()}, 200, out.get());
    ASSERT_OK(a.Release());
    ASSERT_OK(b.Release());
    cudaStreamSynchronize(s);
    EXPECT_EQ(out.Read(), table);
  });
}

TEST(Deadlock, WaitingForOnlyYourselfIsAnError) {
  REQUIRE_GPU();
  Stream s;
  const auto table = Table(10, 7);
  WithinSeconds(20, "Acquire on a bank the caller fills", [&] {
    Lease<std::int32_t> held, second;
    ASSERT_OK(lonely_bank().Acquire(s, 10, table.data(), &held));
    const Status refused = lonely_bank().Acquire(s, 10, table.data(), &second);
    EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.ToString();
    // Re-acquiring into the lease that is still active releases it first.
    ASSERT_OK(lonely_bank().Acquire(s, 10, table.data(), &held));
    EXPECT_TRUE(held.active());
    ASSERT_OK(held.Release());
  });
  Status status;
  EXPECT_EQ(
      (PageableRoundTrip<Bank<std::int32_t>, lonely_bank_reader>(lonely_bank(), s, table, &status)),
      table);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(Faults, AFailedReleaseQuarantinesTheSlotInsteadOfDroppingTheHazard) {
  REQUIRE_GPU();
  Stream s, t;
  const auto table = Table(50, 8);
  const std::int64_t quarantined = CounterValue(Counter::kSlotQuarantined);
  Lease<std::int32_t> lease;
  ASSERT_OK(lonely_bank().Acquire(s, 50, nullptr, &lease));
  ASSERT_OK(lease.UploadFromPageableHost(table.data(), 50));
  InjectFaultForTesting(FaultPoint::kEventRecord, 1);
  EXPECT_EQ(lease.Release().code(), StatusCode::kInternal);
  EXPECT_EQ(CounterValue(Counter::kSlotQuarantined), quarantined + 1);
  // The slot's last reader is unknown: another stream must not get it (and must not hang).
  WithinSeconds(20, "Acquire of a quarantined bank", [&] {
    Lease<std::int32_t> other;
    EXPECT_EQ(lonely_bank().Acquire(t, 50, nullptr, &other).code(),
              StatusCode::kFailedPrecondition);
  });
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(lonely_bank().ClearQuarantine(0), 1);
  Status status;
  EXPECT_EQ(
      (PageableRoundTrip<Bank<std::int32_t>, lonely_bank_reader>(lonely_bank(), t, table, &status)),
      table);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

// Each injectable CUDA call fails once: the call reports it, and the next call is right.
class EachFault : public ::testing::TestWithParam<FaultPoint> {};

TEST_P(EachFault, IsAStatusAndTheNextCallIsRight) {
  REQUIRE_GPU();
  Stream s, t;
  // A slot event recorded on t, so that the next lease on s waits on it.
  const auto warm = Table(256, 9);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(RoundTrip(t, warm), warm);
  PinnedStagingPool* pool = nullptr;
  ASSERT_OK(StagingPoolFor(0, &pool));
  const std::size_t buffers = pool->buffer_count();
  const auto table = Table(1024, 10 + static_cast<int>(GetParam()));
  Status status;
  if (GetParam() == FaultPoint::kHostAlloc) {
    // Every staging buffer busy behind a long kernel, so that an upload has to pin a new one.
    Spin<<<1, 1, 0, s>>>(200'000'000);
    InjectFaultForTesting(GetParam(), 1);
    for (std::size_t i = 0; i <= PinnedStagingPool::kMaxBuffers && status.ok(); ++i) {
      Lease<std::int32_t> lease;
      status = reliability_bank().Acquire(s, 256, nullptr, &lease);
      if (status.ok()) status = lease.UploadFromPageableHost(warm.data(), 256);
    }
  } else {
    InjectFaultForTesting(GetParam(), 1);
    PageableRoundTrip<Bank<std::int32_t>, reliability_bank_reader>(reliability_bank(), s, table,
                                                                   &status);
  }
  InjectFaultForTesting(GetParam(), 0);
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status.ToString();
  ASSERT_CUDA(cudaDeviceSynchronize());
  reliability_bank().ClearQuarantine(0);
  EXPECT_EQ(RoundTrip(s, table), table);
  EXPECT_EQ(RoundTrip(t, warm), warm);
  if (GetParam() != FaultPoint::kHostAlloc) {
    EXPECT_LE(pool->buffer_count(), buffers + 1) << "no staging buffer leaked per failure";
  }
  EXPECT_LE(pool->buffer_count(), PinnedStagingPool::kMaxBuffers);
}

INSTANTIATE_TEST_SUITE_P(Core, EachFault,
                         ::testing::Values(FaultPoint::kHostAlloc, FaultPoint::kEventRecord,
                                           FaultPoint::kMemcpyAsync, FaultPoint::kStreamWaitEvent));

TEST(Staging, ASlowStreamDoesNotMakeOthersPinMore) {
  REQUIRE_GPU();
  Stream s, t;
  PinnedStagingPool* pool = nullptr;
  ASSERT_OK(StagingPoolFor(0, &pool));
  const auto first = Table(1024, 20);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(RoundTrip(s, first), first);  // a buffer exists
  const std::size_t before = pool->buffer_count();
  Spin<<<1, 1, 0, t>>>(300'000'000);  // 0.3 s
  // Another bank, so that s never waits for t on the device: only the staging pool is shared.
  Lease<std::int32_t> slow;
  ASSERT_OK(lonely_bank().Acquire(t, 256, nullptr, &slow));
  ASSERT_OK(slow.UploadFromPageableHost(first.data(), 256));
  ASSERT_OK(slow.Release());
  for (int i = 0; i < 50; ++i) {
    const auto table = Table(1000, 100 + i);
    EXPECT_EQ(RoundTrip(s, table), table);
  }
  EXPECT_LE(pool->buffer_count(), before + 2);
  EXPECT_LE(pool->buffer_count(), PinnedStagingPool::kMaxBuffers);
  cudaStreamSynchronize(t);
}

// Frees run on a thread of their own; this waits (bounded) until they are done.
void WaitForFrees(PinnedStagingPool* pool) {
  for (int i = 0; i < 100 && pool->frees_pending() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(pool->frees_pending(), 0) << "a free still pending after 5 s";
}

TEST(Staging, IdleBuffersAreFreedWithoutWaiting) {
  REQUIRE_GPU();
  Stream s, t;
  PinnedStagingPool* pool = nullptr;
  ASSERT_OK(StagingPoolFor(0, &pool));
  ASSERT_CUDA(cudaDeviceSynchronize());
  ASSERT_OK(pool->ReleaseIdleBuffers());
  WaitForFrees(pool);
  const std::size_t retired = pool->buffer_count();  // buffers whose event failed in a fault test
  const auto idle_release = pool->idle_release();
  // A burst: every upload's buffer still in flight behind a long kernel, so each pins its own.
  constexpr std::size_t kBurst = 6;
  Spin<<<1, 1, 0, t>>>(200'000'000);
  for (std::size_t i = 0; i < kBurst; ++i) {
    const auto table = Table(256, 40 + static_cast<int>(i));  // distinct: no upload is skipped
    Lease<std::int32_t> lease;
    ASSERT_OK(reliability_bank().Acquire(t, 256, nullptr, &lease));
    ASSERT_OK(lease.UploadFromPageableHost(table.data(), 256));
    ASSERT_OK(lease.Release());
  }
  EXPECT_EQ(pool->buffer_count(), retired + kBurst);
  ASSERT_CUDA(cudaStreamSynchronize(t));
  const auto recent = Table(256, 31);
  EXPECT_EQ(RoundTrip(s, recent), recent);
  EXPECT_EQ(pool->buffer_count(), retired + kBurst)
      << "buffers idle for less than idle_release() are kept";

  const std::int64_t freed = CounterValue(Counter::kStagingBufferFreed);
  pool->set_idle_release(std::chrono::milliseconds(0));
  const auto later = Table(256, 32);
  EXPECT_EQ(RoundTrip(s, later), later);
  pool->set_idle_release(idle_release);
  EXPECT_EQ(pool->buffer_count(), retired + PinnedStagingPool::kKeptIdleBuffers + 1);
  WaitForFrees(pool);
  EXPECT_EQ(CounterValue(Counter::kStagingBufferFreed) - freed,
            static_cast<std::int64_t>(kBurst - PinnedStagingPool::kKeptIdleBuffers - 1));

  // cudaFreeHost waits for the device, here for a kernel on another stream that runs until this
  // thread opens the gate: neither the caller of ReleaseIdleBuffers nor an upload that needs a
  // buffer meanwhile waits with it (either would hold the gate shut until the kernel's 10 s ran).
  HostGate gate;
  ASSERT_TRUE(gate.ok());
  SpinUntilOpen<<<1, 1, 0, t>>>(gate.device_flag(), 10'000'000'000);
  if (testing::UnderSanitizer()) gate.Open();  // there the copy on s would wait for t's kernel
  ASSERT_OK(pool->ReleaseIdleBuffers());
  EXPECT_EQ(pool->buffer_count(), retired);
  const std::int64_t fallbacks = CounterValue(Counter::kStagingPageableFallback);
  const auto meanwhile = Table(256, 33);
  Lease<std::int32_t> lease;
  ASSERT_OK(reliability_bank().Acquire(s, 256, nullptr, &lease));
  ASSERT_OK(lease.UploadFromPageableHost(meanwhile.data(), 256));
  ASSERT_OK(lease.Release());
  if (!testing::UnderSanitizer()) {
    EXPECT_EQ(cudaStreamQuery(t), cudaErrorNotReady)
        << "ReleaseIdleBuffers or the upload beside a pending free waited for the device";
  }
  EXPECT_EQ(CounterValue(Counter::kStagingPageableFallback) - fallbacks, 1)
      << "no buffer is pinned while a free is pending";
  gate.Open();
  ASSERT_CUDA(cudaStreamSynchronize(t));
  WaitForFrees(pool);
  const auto again = Table(256, 34);
  EXPECT_EQ(RoundTrip(s, again), again);  // and uploads pin again as they need
  EXPECT_EQ(pool->buffer_count(), retired + 1);
}

TEST(Staging, ABufferWhoseEventFailedIsFreed) {
  REQUIRE_GPU();
  Stream s;
  PinnedStagingPool* pool = nullptr;
  ASSERT_OK(StagingPoolFor(0, &pool));
  const auto table = Table(1024, 60);
  EXPECT_EQ(RoundTrip(s, table), table);  // a buffer exists
  ASSERT_CUDA(cudaDeviceSynchronize());
  WaitForFrees(pool);
  const std::size_t buffers = pool->buffer_count();
  const std::int64_t freed = CounterValue(Counter::kStagingBufferFreed);
  InjectFaultForTesting(FaultPoint::kEventRecord, 1);
  Status status;
  PageableRoundTrip<Bank<std::int32_t>, reliability_bank_reader>(reliability_bank(), s,
                                                                 Table(1024, 61), &status);
  InjectFaultForTesting(FaultPoint::kEventRecord, 0);
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status.ToString();
  ASSERT_CUDA(cudaDeviceSynchronize());
  reliability_bank().ClearQuarantine(0);
  WaitForFrees(pool);
  EXPECT_EQ(CounterValue(Counter::kStagingBufferFreed) - freed, 1)
      << "the pinned buffer whose event failed is freed once its copy has run";
  EXPECT_LE(pool->buffer_count(), buffers);
  EXPECT_EQ(RoundTrip(s, table), table);
}

TEST(Staging, NoThreadToFreeBuffersIsAStatusAndTheyAreFreedLater) {
  REQUIRE_GPU();
  Stream s;
  PinnedStagingPool* pool = nullptr;
  ASSERT_OK(StagingPoolFor(0, &pool));
  const auto table = Table(1024, 62);
  EXPECT_EQ(RoundTrip(s, table), table);  // a buffer exists
  ASSERT_CUDA(cudaDeviceSynchronize());
  WaitForFrees(pool);
  const std::size_t buffers = pool->buffer_count();
  ASSERT_GT(buffers, 0u);
  const std::int64_t freed = CounterValue(Counter::kStagingBufferFreed);
  InjectFaultForTesting(FaultPoint::kThreadStart, 1);
  const Status status = pool->ReleaseIdleBuffers();  // std::thread throws std::system_error
  InjectFaultForTesting(FaultPoint::kThreadStart, 0);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_EQ(pool->frees_pending(), 0);
  EXPECT_EQ(pool->buffer_count(), buffers) << "kept for the next free";
  EXPECT_OK(pool->ReleaseIdleBuffers());
  WaitForFrees(pool);
  EXPECT_EQ(pool->buffer_count(), 0u);
  EXPECT_EQ(CounterValue(Counter::kStagingBufferFreed) - freed, static_cast<std::int64_t>(buffers));
  EXPECT_EQ(RoundTrip(s, table), table);
}

TEST(Devices, TheDriverReportsEachStreamsDevice) {
  REQUIRE_GPU();
  int devices = 0;
  ASSERT_CUDA(cudaGetDeviceCount(&devices));
  for (int d = 0; d < devices; ++d) {
    ASSERT_CUDA(cudaSetDevice(d));
    cudaStream_t stream = nullptr;
    ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    ASSERT_CUDA(cudaSetDevice((d + 1) % devices));  // another device current, where there is one
    int found = -1;
    ASSERT_OK(detail::StreamDeviceThroughDriver(stream, &found));
    EXPECT_EQ(found, d);
    int current = -1;
    cudaGetDevice(&current);
    EXPECT_EQ(current, (d + 1) % devices) << "the caller's current device is left alone";
    cudaStreamDestroy(stream);
  }
  cudaSetDevice(0);
}

}  // namespace
}  // namespace constmem

// SPDX-License-Identifier: Apache-2.0
// The core on a real GPU: uploads from each source, skipped uploads, errors, both hazard directions
// (with tracking on, and off to prove the tests can fail), slot overlap, by-value tables, a
// cross-talk stress and several devices. Every test skips itself where no GPU is present.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "constmem/constmem.cuh"
#include "constmem/dispatch.cuh"
#include "test_support.cuh"

CONSTMEM_DEFINE_BANK(four_slot_bank, std::int32_t, 256, 4);
CONSTMEM_DEFINE_BANK(single_slot_bank, std::int32_t, 256, 1);

namespace constmem {
namespace {

using testing::DeviceBuffer;
using testing::GlobalTimerNs;
using testing::SpinFor;
using testing::Stream;

// Copies the table out after an optional spin; thread i reads entry i (a test, not a hot path).
template <class Reader>
__global__ void CopyTableKernel(Reader table, int n, std::int32_t* out, long long spin_ns,
                                unsigned long long* times) {
  if (spin_ns > 0 && threadIdx.x == 0) {
    if (times != nullptr) times[0] = GlobalTimerNs();
    SpinFor(spin_ns);
    if (times != nullptr) times[1] = GlobalTimerNs();
  }
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = table[i];
}

__global__ void SpinKernel(long long spin_ns) { SpinFor(spin_ns); }

// A weighted sum with warp-uniform reads: order and content of the table both matter.
template <class Reader>
__global__ void WeightedSumKernel(Reader table, int n, long long* out) {
  long long sum = 0;
  for (int j = 0; j < n; ++j) sum += static_cast<long long>(table[j]) * (j + 1);
  if (threadIdx.x == 0) *out = sum;
}

std::vector<std::int32_t> RandomTable(std::mt19937& rng, int n) {
  std::uniform_int_distribution<std::int32_t> value(-1000000, 1000000);
  std::vector<std::int32_t> table(n);
  for (auto& v : table) v = value(rng);
  return table;
}

template <class T>
class PinnedBuffer {
 public:
  explicit PinnedBuffer(const std::vector<T>& values) : n_(values.size()) {
    cudaHostAlloc(&data_, n_ * sizeof(T), cudaHostAllocDefault);
    std::copy(values.begin(), values.end(), data_);
  }
  ~PinnedBuffer() { cudaFreeHost(data_); }
  T* get() const { return data_; }

 private:
  T* data_ = nullptr;
  std::size_t n_;
};

class TrackingSwitch {
 public:
  explicit TrackingSwitch(bool enabled) { SetHazardTrackingForTesting(enabled); }
  ~TrackingSwitch() { SetHazardTrackingForTesting(true); }
};

// Acquires, uploads from `kind`, copies the table out on `stream` and returns what the kernel saw.
std::vector<std::int32_t> RoundTrip(Bank<std::int32_t>& bank, cudaStream_t stream,
                                    const std::vector<std::int32_t>& table, SourceKind kind,
                                    bool* skipped = nullptr) {
  const int n = static_cast<int>(table.size());
  DeviceBuffer<std::int32_t> out(n), device_table(n);
  PinnedBuffer<std::int32_t> pinned(table);
  testing::CopyToDevice(device_table.get(), table.data(), n * sizeof(std::int32_t));
  const std::int32_t* source = kind == SourceKind::kDevice       ? device_table.get()
                               : kind == SourceKind::kPinnedHost ? pinned.get()
                                                                 : table.data();
  Lease<std::int32_t> lease;
  EXPECT_TRUE(bank.Acquire(stream, n, kind == SourceKind::kDevice ? nullptr : source, &lease).ok());
  const Status uploaded = lease.Upload(source, n, kind);
  EXPECT_TRUE(uploaded.ok()) << uploaded.ToString();
  if (skipped != nullptr) *skipped = lease.upload_skipped();
  CopyTableKernel<<<1, 256, 0, stream>>>(four_slot_bank_reader{lease.offset()}, n, out.get(), 0,
                                         nullptr);
  EXPECT_TRUE(lease.Release().ok());
  cudaStreamSynchronize(stream);
  return out.Read();
}

class UploadSources : public ::testing::TestWithParam<SourceKind> {};

TEST_P(UploadSources, EveryLengthLandsIntact) {
  REQUIRE_GPU();
  Stream stream;
  std::mt19937 rng(11);
  // 1 entry, one full slot, a run of two slots, and the whole bank.
  for (int n : {1, 100, 256, 257, 700, 1024}) {
    const auto table = RandomTable(rng, n);
    EXPECT_EQ(RoundTrip(four_slot_bank(), stream, table, GetParam()), table) << "n=" << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Core, UploadSources,
                         ::testing::Values(SourceKind::kDevice, SourceKind::kPinnedHost,
                                           SourceKind::kPageableHost));

TEST(Uploads, UnchangedHostContentIsNotCopiedAgain) {
  REQUIRE_GPU();
  Stream stream;
  std::mt19937 rng(12);
  auto table = RandomTable(rng, 200);
  bool skipped = true;
  EXPECT_EQ(RoundTrip(four_slot_bank(), stream, table, SourceKind::kPageableHost, &skipped), table);
  EXPECT_FALSE(skipped);
  const std::int64_t skips = CounterValue(Counter::kUploadSkipped);
  EXPECT_EQ(RoundTrip(four_slot_bank(), stream, table, SourceKind::kPageableHost, &skipped), table);
  EXPECT_TRUE(skipped);
  EXPECT_EQ(CounterValue(Counter::kUploadSkipped), skips + 1);
  table[199] += 1;
  EXPECT_EQ(RoundTrip(four_slot_bank(), stream, table, SourceKind::kPageableHost, &skipped), table);
  EXPECT_FALSE(skipped) << "one changed entry must be uploaded";
}

TEST(Uploads, ErrorsAreStatusesAndTheNextCallWorks) {
  REQUIRE_GPU();
  Stream stream;
  Lease<std::int32_t> lease;
  EXPECT_EQ(four_slot_bank().Acquire(stream, 0, nullptr, &lease).code(),
            StatusCode::kInvalidArgument);
  const Status too_big = four_slot_bank().Acquire(stream, 1025, nullptr, &lease);
  EXPECT_EQ(too_big.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_big.message().find("1024"), std::string::npos) << too_big.message();
  ASSERT_OK(four_slot_bank().Acquire(stream, 10, nullptr, &lease));
  std::vector<std::int32_t> eleven(11, 1);
  EXPECT_EQ(lease.UploadFromPageableHost(eleven.data(), 300).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(lease.UploadFromPageableHost(nullptr, 5).code(), StatusCode::kInvalidArgument);
  ASSERT_OK(lease.Release());
  EXPECT_EQ(lease.UploadFromPageableHost(eleven.data(), 5).code(), StatusCode::kFailedPrecondition);
  std::mt19937 rng(13);
  const auto table = RandomTable(rng, 64);
  EXPECT_EQ(RoundTrip(four_slot_bank(), stream, table, SourceKind::kPageableHost), table);
}

// A failed occupancy query is an error, asked again on the next call; never a grid of one block.
TEST(Grids, ResidentBlocksFailuresAreErrors) {
  REQUIRE_GPU();
  int blocks = -1;
  EXPECT_EQ((ResidentBlocks<SpinKernel>(256, -1, &blocks).code()), StatusCode::kFailedPrecondition);
  const Status too_much_shared = ResidentBlocks<SpinKernel>(256, 0, &blocks, std::size_t{1} << 30);
  EXPECT_FALSE(too_much_shared.ok());
  EXPECT_EQ(blocks, -1);
  ASSERT_OK(ResidentBlocks<SpinKernel>(256, 0, &blocks));
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  EXPECT_GE(blocks, sms);  // at least one block a multiprocessor
}

TEST(Staging, ABufferIsReusedOnlyAfterItsCopyRan) {
  REQUIRE_GPU();
  Stream stream;
  std::mt19937 rng(14);
  PinnedStagingPool* pool = nullptr;
  ASSERT_OK(StagingPoolFor(0, &pool));
  // Ten uploads queued behind a long kernel: each needs its own buffer, and each kernel must see
  // its own table, so no buffer was refilled while its copy was still pending.
  SpinKernel<<<1, 1, 0, stream>>>(20'000'000);
  std::vector<std::vector<std::int32_t>> tables, expected;
  std::vector<std::unique_ptr<DeviceBuffer<std::int32_t>>> outs;
  for (int i = 0; i < 10; ++i) {
    tables.push_back(RandomTable(rng, 256));
    outs.push_back(std::make_unique<DeviceBuffer<std::int32_t>>(256));
    Lease<std::int32_t> lease;
    ASSERT_OK(single_slot_bank().Acquire(stream, 256, nullptr, &lease));
    ASSERT_OK(lease.UploadFromPageableHost(tables.back().data(), 256));
    CopyTableKernel<<<1, 256, 0, stream>>>(single_slot_bank_reader{lease.offset()}, 256,
                                           outs.back()->get(), 0, nullptr);
    ASSERT_OK(lease.Release());
    expected.push_back(tables.back());
    tables.back()[0] += 1;  // the caller may reuse its pageable memory as soon as Upload returns
  }
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(outs[i]->Read(), expected[i]) << i;
  // Once the copies ran, the pool stops growing: sequential uploads reuse one buffer.
  const std::size_t grown = pool->buffer_count();
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(RoundTrip(four_slot_bank(), stream, tables[i % 10], SourceKind::kPageableHost),
              tables[i % 10]);
  }
  EXPECT_LE(pool->buffer_count(), grown + 1);
}

constexpr long long kSpinNs = 50'000'000;  // 50 ms: far longer than any host enqueue

// Stream A reads table X after a long spin; stream B then uploads Y into the same (single) slot.
// Tracked, B's upload waits on the device for A's kernel and the host returns at once.
void UploadAfterLongReader(bool tracking) {
  TrackingSwitch tracking_switch(tracking);
  Stream a, b;
  std::mt19937 rng(21);
  const auto x = RandomTable(rng, 256), y = RandomTable(rng, 256);
  PinnedBuffer<std::int32_t> x_pinned(x), y_pinned(y);
  DeviceBuffer<std::int32_t> out_a(256), out_b(256);

  Lease<std::int32_t> lease_a;
  ASSERT_OK(single_slot_bank().Acquire(a, 256, nullptr, &lease_a));
  ASSERT_OK(lease_a.UploadFromPinnedHost(x_pinned.get(), 256));
  CopyTableKernel<<<1, 256, 0, a>>>(single_slot_bank_reader{lease_a.offset()}, 256, out_a.get(),
                                    kSpinNs, nullptr);
  ASSERT_OK(lease_a.Release());

  const auto host_start = std::chrono::steady_clock::now();
  Lease<std::int32_t> lease_b;
  ASSERT_OK(single_slot_bank().Acquire(b, 256, nullptr, &lease_b));
  ASSERT_OK(lease_b.UploadFromPinnedHost(y_pinned.get(), 256));
  CopyTableKernel<<<1, 256, 0, b>>>(single_slot_bank_reader{lease_b.offset()}, 256, out_b.get(), 0,
                                    nullptr);
  ASSERT_OK(lease_b.Release());
  const double host_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host_start)
          .count();
  ASSERT_CUDA(cudaDeviceSynchronize());

  EXPECT_LT(host_ms, 10.0) << "the host must not wait for the 50 ms kernel";
  EXPECT_EQ(out_b.Read(), y);
  if (tracking) {
    EXPECT_EQ(out_a.Read(), x) << "B's upload overwrote a table A was still reading";
  } else {
    EXPECT_EQ(out_a.Read(), y) << "without tracking the overwrite should show";
  }
}

TEST(Hazards, UploadWaitsForAnEarlierReaderOnAnotherStream) {
  REQUIRE_GPU();
  UploadAfterLongReader(true);
}

TEST(Hazards, WithoutTrackingTheOverwriteShows) {
  REQUIRE_GPU();
  UploadAfterLongReader(false);
}

// Stream A's upload of X is delayed behind a long kernel; stream B asks for the same X, skips its
// own copy, and must still not read the slot before A's copy has landed.
void ReadAfterDelayedUpload(bool tracking) {
  TrackingSwitch tracking_switch(tracking);
  Stream a, b;
  std::mt19937 rng(22);
  const auto z = RandomTable(rng, 256), x = RandomTable(rng, 256);
  PinnedBuffer<std::int32_t> x_pinned(x);
  DeviceBuffer<std::int32_t> out_b(256), device_z(256);
  testing::CopyToDevice(device_z.get(), z.data(), sizeof(std::int32_t) * 256);
  {
    Lease<std::int32_t> lease;  // the slot starts out holding Z
    ASSERT_OK(single_slot_bank().Acquire(a, 256, nullptr, &lease));
    ASSERT_OK(lease.UploadFromDevice(device_z.get(), 256));
  }
  ASSERT_CUDA(cudaDeviceSynchronize());

  SpinKernel<<<1, 1, 0, a>>>(kSpinNs);
  Lease<std::int32_t> lease_a;
  ASSERT_OK(single_slot_bank().Acquire(a, 256, x_pinned.get(), &lease_a));
  ASSERT_OK(lease_a.UploadFromPinnedHost(x_pinned.get(), 256));
  ASSERT_FALSE(lease_a.upload_skipped());
  ASSERT_OK(lease_a.Release());

  Lease<std::int32_t> lease_b;
  ASSERT_OK(single_slot_bank().Acquire(b, 256, x.data(), &lease_b));
  ASSERT_OK(lease_b.UploadFromPageableHost(x.data(), 256));
  EXPECT_TRUE(lease_b.upload_skipped());
  CopyTableKernel<<<1, 256, 0, b>>>(single_slot_bank_reader{lease_b.offset()}, 256, out_b.get(), 0,
                                    nullptr);
  ASSERT_OK(lease_b.Release());
  ASSERT_CUDA(cudaDeviceSynchronize());
  if (tracking) {
    EXPECT_EQ(out_b.Read(), x) << "B read the slot before A's upload landed";
  } else {
    EXPECT_EQ(out_b.Read(), z) << "without tracking B should read the stale table";
  }
}

TEST(Hazards, ReadWaitsForAnUploadMadeOnAnotherStream) {
  REQUIRE_GPU();
  ReadAfterDelayedUpload(true);
}

TEST(Hazards, WithoutTrackingTheStaleReadShows) {
  REQUIRE_GPU();
  ReadAfterDelayedUpload(false);
}

// Copies `table` (host memory) out through LaunchWithTable's global placement after a spin: the
// table travels in a stream-ordered buffer (no global bank here).
Status CopyThroughGlobalMemory(cudaStream_t stream, const std::vector<std::int32_t>& table,
                               std::int32_t* out, long long spin_ns) {
  TableView<std::int32_t> view;
  view.values = table.data();
  view.size = static_cast<std::int64_t>(table.size());
  view.source = SourceKind::kPageableHost;
  const int n = static_cast<int>(table.size());
  return LaunchWithTable<ByValueTable<std::int32_t, 256>, four_slot_bank_bank>(
      stream, view, Placement::kGlobalMemory, [&](int, const auto& reader) {
        CopyTableKernel<<<1, 256, 0, stream>>>(reader, n, out, spin_ns, nullptr);
        return CudaStatus(cudaGetLastError(), "CopyTableKernel launch");
      });
}

// Stream A reads a host table of 16 KiB (beyond the bank) from global memory after a long spin;
// stream B then takes a buffer for another table. Ordered, A's buffer is freed only after its
// kernel, so B gets other memory; unordered, B reuses A's block and A reads B's table.
void HostTableBufferOutlivesItsReader(bool tracking) {
  TrackingSwitch tracking_switch(tracking);
  Stream a, b;
  std::mt19937 rng(24);
  constexpr int kEntries = 4096;
  const auto x = RandomTable(rng, kEntries), y = RandomTable(rng, kEntries);
  DeviceBuffer<std::int32_t> out_a(kEntries), out_b(kEntries);
  // A longer spin than the other hazard tests': the first calls also create the device's pool
  // and pinned staging (milliseconds), which must not be mistaken for a wait.
  constexpr long long kLongSpinNs = 200'000'000;
  const auto host_start = std::chrono::steady_clock::now();
  ASSERT_OK(CopyThroughGlobalMemory(a, x, out_a.get(), kLongSpinNs));
  ASSERT_OK(CopyThroughGlobalMemory(b, y, out_b.get(), 0));
  const double host_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host_start)
          .count();
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_LT(host_ms, 100.0) << "the host must not wait for the 200 ms kernel";
  EXPECT_EQ(out_b.Read(), y);
  if (tracking) {
    EXPECT_EQ(out_a.Read(), x) << "B's table overwrote the buffer A was still reading";
  } else {
    EXPECT_EQ(out_a.Read(), y) << "without ordering the reuse should show";
  }
}

TEST(StreamBuffers, AHostTableInGlobalMemoryOutlivesItsReader) {
  REQUIRE_GPU();
  HostTableBufferOutlivesItsReader(true);
}

TEST(StreamBuffers, WithoutOrderingTheReuseShows) {
  REQUIRE_GPU();
  HostTableBufferOutlivesItsReader(false);
}

TEST(StreamBuffers, HostTablesOfEverySizeReachTheKernel) {
  REQUIRE_GPU();
  Stream stream;
  std::mt19937 rng(25);
  for (int n : {1, 1024, 1025, 100000, 1 << 20}) {
    const auto table = RandomTable(rng, n);
    DeviceBuffer<std::int32_t> out(n);
    const std::int64_t before = CounterValue(Counter::kStreamBufferUpload);
    ASSERT_OK(CopyThroughGlobalMemory(stream, table, out.get(), 0));
    ASSERT_CUDA(cudaStreamSynchronize(stream));
    EXPECT_EQ(out.Read(), table) << "n=" << n;
    EXPECT_EQ(CounterValue(Counter::kStreamBufferUpload), before + 1);
  }
}

TEST(Slots, KernelsOnTwoStreamsOverlapInTime) {
  REQUIRE_GPU();
  Stream a, b;
  std::mt19937 rng(23);
  const auto x = RandomTable(rng, 256), y = RandomTable(rng, 256);
  DeviceBuffer<std::int32_t> out_a(256), out_b(256);
  DeviceBuffer<unsigned long long> times(4);
  Lease<std::int32_t> lease_a, lease_b;
  ASSERT_OK(four_slot_bank().Acquire(a, 256, nullptr, &lease_a));
  ASSERT_OK(lease_a.UploadFromPageableHost(x.data(), 256));
  ASSERT_OK(four_slot_bank().Acquire(b, 256, nullptr, &lease_b));
  ASSERT_OK(lease_b.UploadFromPageableHost(y.data(), 256));
  EXPECT_NE(lease_a.first_slot(), lease_b.first_slot());
  CopyTableKernel<<<1, 256, 0, a>>>(four_slot_bank_reader{lease_a.offset()}, 256, out_a.get(),
                                    20'000'000, times.get());
  CopyTableKernel<<<1, 256, 0, b>>>(four_slot_bank_reader{lease_b.offset()}, 256, out_b.get(),
                                    20'000'000, times.get() + 2);
  ASSERT_OK(lease_a.Release());
  ASSERT_OK(lease_b.Release());
  ASSERT_CUDA(cudaDeviceSynchronize());
  const auto t = times.Read();
  EXPECT_LT(t[2], t[1]) << "B started after A ended: the slots serialised the streams";
  EXPECT_LT(t[0], t[3]);
  EXPECT_EQ(out_a.Read(), x);
  EXPECT_EQ(out_b.Read(), y);
}

template <std::size_t kCapacity>
__global__ void ByValueCopyKernel(
    const __grid_constant__ ByValueTable<std::int32_t, kCapacity> table, std::int32_t* out) {
  for (int i = threadIdx.x; i < table.size; i += blockDim.x) out[i] = table[i];
}

TEST(ByValue, TablesUpTo4KiBAndBeyondReachTheKernel) {
  REQUIRE_GPU();
  std::mt19937 rng(24);
  {
    const auto table = RandomTable(rng, 1000);
    ByValueTable<std::int32_t, 1024> by_value;
    ASSERT_OK(FillByValueTable(table.data(), table.size(), &by_value));
    DeviceBuffer<std::int32_t> out(1000);
    ByValueCopyKernel<<<1, 256>>>(by_value, out.get());
    ASSERT_CUDA(cudaDeviceSynchronize());
    EXPECT_EQ(out.Read(), table);
  }
  {
    const auto table = RandomTable(rng, 8000);  // 32,004 bytes: needs CUDA 12.1+ and sm_70+
    ASSERT_OK(CheckKernelParamBytes(sizeof(ByValueTable<std::int32_t, 8000>), 0));
    auto by_value = std::make_unique<ByValueTable<std::int32_t, 8000>>();
    ASSERT_OK(FillByValueTable(table.data(), table.size(), by_value.get()));
    DeviceBuffer<std::int32_t> out(8000);
    ByValueCopyKernel<<<1, 256>>>(*by_value, out.get());
    ASSERT_CUDA(cudaDeviceSynchronize());
    EXPECT_EQ(out.Read(), table);
  }
  ByValueTable<std::int32_t, 16> small;
  std::vector<std::int32_t> seventeen(17);
  EXPECT_EQ(FillByValueTable(seventeen.data(), 17, &small).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckKernelParamBytes(40000, 0).code(), StatusCode::kInvalidArgument);
}

int StressLaunches() {
  const char* value = std::getenv("CONSTMEM_STRESS_LAUNCHES");
  return value != nullptr ? std::atoi(value) : 100000;
}

// Every thread owns 4 streams and enqueues launches each with its own table, from all three
// sources, through one shared 4-slot bank; every result is checked at the end.
void StressOneDevice(int device, int threads, int launches_per_thread,
                     std::atomic<long>* mismatches, std::atomic<long>* failures) {
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([=] {
      cudaSetDevice(device);
      std::mt19937 rng(1000 * device + t);
      constexpr int kStreams = 4;
      constexpr int kRing = 64;  // pinned and device sources cycle through rings of tables
      std::vector<cudaStream_t> streams(kStreams);
      for (auto& s : streams) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      DeviceBuffer<long long> results(launches_per_thread);
      DeviceBuffer<std::int32_t> device_ring(kRing * 512);
      std::int32_t* pinned_ring = nullptr;
      cudaHostAlloc(&pinned_ring, kRing * 512 * sizeof(std::int32_t), cudaHostAllocDefault);
      std::vector<cudaEvent_t> ring_free(kRing);
      for (auto& e : ring_free) cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
      std::vector<long long> expected(launches_per_thread);
      std::uniform_int_distribution<int> length(1, 512);
      std::uniform_int_distribution<std::int32_t> value(-100000, 100000);
      std::vector<std::int32_t> table;
      for (int i = 0; i < launches_per_thread; ++i) {
        cudaStream_t stream = streams[i % kStreams];
        const int n = length(rng);
        table.resize(n);
        long long sum = 0;
        for (int j = 0; j < n; ++j) {
          table[j] = value(rng);
          sum += static_cast<long long>(table[j]) * (j + 1);
        }
        expected[i] = sum;
        const auto kind = static_cast<SourceKind>(i % 3);
        const int r = i % kRing;
        const std::int32_t* source = table.data();
        if (kind != SourceKind::kPageableHost) {
          cudaEventSynchronize(ring_free[r]);  // the test may wait; the core never does
          std::copy(table.begin(), table.end(), pinned_ring + r * 512);
          source = pinned_ring + r * 512;
          if (kind == SourceKind::kDevice) {
            cudaMemcpyAsync(device_ring.get() + r * 512, source, n * sizeof(std::int32_t),
                            cudaMemcpyHostToDevice, stream);
            source = device_ring.get() + r * 512;
          }
        }
        Lease<std::int32_t> lease;
        Status status = four_slot_bank().Acquire(
            stream, n, kind == SourceKind::kDevice ? nullptr : source, &lease);
        if (status.ok()) status = lease.Upload(source, n, kind);
        if (status.ok()) {
          WeightedSumKernel<<<1, 32, 0, stream>>>(four_slot_bank_reader{lease.offset()}, n,
                                                  results.get() + i);
          status = lease.Release();
        }
        cudaEventRecord(ring_free[r], stream);
        if (!status.ok()) failures->fetch_add(1);
      }
      cudaDeviceSynchronize();
      const auto got = results.Read();
      for (int i = 0; i < launches_per_thread; ++i) {
        if (got[i] != expected[i]) mismatches->fetch_add(1);
      }
      for (auto& e : ring_free) cudaEventDestroy(e);
      cudaFreeHost(pinned_ring);
      for (auto& s : streams) cudaStreamDestroy(s);
    });
  }
  for (auto& w : workers) w.join();
}

TEST(Stress, EightThreadsFourStreamsEachEveryOutputChecked) {
  REQUIRE_GPU();
  constexpr int kThreads = 8;
  const int per_thread = std::max(1, StressLaunches() / kThreads);
  std::atomic<long> mismatches{0}, failures{0};
  StressOneDevice(0, kThreads, per_thread, &mismatches, &failures);
  RecordProperty("launches", kThreads * per_thread);
  std::printf("[stress] launches=%d mismatches=%ld failures=%ld\n", kThreads * per_thread,
              mismatches.load(), failures.load());
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Devices, EachDeviceHasItsOwnSymbolAndState) {
  REQUIRE_GPU();
  int devices = 0;
  ASSERT_CUDA(cudaGetDeviceCount(&devices));
  if (devices < 2) GTEST_SKIP() << "needs two GPUs; found " << devices;
  std::atomic<long> mismatches{0}, failures{0};
  std::vector<std::thread> per_device;
  const int per_thread = std::max(1, StressLaunches() / (4 * devices));
  for (int d = 0; d < devices; ++d) {
    per_device.emplace_back([&, d] { StressOneDevice(d, 4, per_thread, &mismatches, &failures); });
  }
  for (auto& t : per_device) t.join();
  std::printf("[multi-device] devices=%d launches=%d mismatches=%ld failures=%ld\n", devices,
              devices * 4 * per_thread, mismatches.load(), failures.load());
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace constmem

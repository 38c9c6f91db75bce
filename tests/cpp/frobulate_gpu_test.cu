// SPDX-License-Identifier: Apache-2.0
// Frobulate's GPU launcher, driven without TensorFlow on a CUDA stream, against the CPU functor:
// bit for bit, for random data and tables, every table source and every placement.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "constmem/constmem.cuh"
#include "constmem/testing/gpu_testing.cuh"
#include "frobulate/frobulate_functor.h"
#include "frobulate/frobulate_launcher.h"
#include "test_support.cuh"

namespace constmem {
namespace ops {
namespace {

template <class T>
std::vector<T> RandomData(std::mt19937_64& rng, std::int64_t n) {
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-20, 30);
  std::vector<T> data(n);
  for (auto& d : data) d = static_cast<T>(std::ldexp(mantissa(rng), exponent(rng)));
  return data;
}

std::vector<std::int32_t> RandomTable(std::mt19937_64& rng, std::int64_t n) {
  std::uniform_int_distribution<std::int32_t> value(-(1 << 30), 1 << 30);
  std::vector<std::int32_t> table(n);
  for (auto& t : table) t = value(rng);
  return table;
}

// Runs one case on the GPU; returns the number of elements that differ bitwise from the CPU.
template <class T>
std::int64_t MismatchesForCase(std::int64_t count, std::int64_t table_size, SourceKind source,
                               int misalign, std::uint64_t seed, Placement* placement) {
  std::mt19937_64 rng(seed);
  const auto data = RandomData<T>(rng, count);
  const auto table = RandomTable(rng, table_size);
  std::vector<T> expected(count);
  FrobulateRange(data.data(), expected.data(), 0, count, table.data(), table_size);

  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  T *device_data = nullptr, *device_out = nullptr;
  std::int32_t *device_table = nullptr, *pinned_table = nullptr;
  cudaMalloc(&device_data, (count + 1) * sizeof(T));
  cudaMalloc(&device_out, (count + 1) * sizeof(T));
  cudaMalloc(&device_table, table_size * sizeof(std::int32_t));
  cudaHostAlloc(&pinned_table, table_size * sizeof(std::int32_t), cudaHostAllocDefault);
  std::memcpy(pinned_table, table.data(), table_size * sizeof(std::int32_t));
  testing::CopyToDevice(device_table, table.data(), table_size * sizeof(std::int32_t));
  testing::CopyToDevice(device_data + misalign, data.data(), count * sizeof(T));
  cudaMemset(device_out, 0xFF, (count + 1) * sizeof(T));  // NaN poison: unwritten shows
  // The setup ran on the default stream, which the non-blocking stream does not wait for.
  cudaDeviceSynchronize();

  TableView<std::int32_t> gpu_table;
  gpu_table.size = table_size;
  gpu_table.source = source;
  gpu_table.values = source == SourceKind::kDevice       ? device_table
                     : source == SourceKind::kPinnedHost ? pinned_table
                                                         : table.data();
  LaunchReport report;
  const Status status = LaunchFrobulate<T>(stream, device_data + misalign, device_out + misalign,
                                           count, gpu_table, &report);
  EXPECT_TRUE(status.ok()) << status.ToString();
  *placement = report.placement;
  cudaStreamSynchronize(stream);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<T> got(count);
  cudaMemcpy(got.data(), device_out + misalign, count * sizeof(T), cudaMemcpyDeviceToHost);
  std::int64_t mismatches = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    if (std::memcmp(&got[i], &expected[i], sizeof(T)) != 0) ++mismatches;
  }
  cudaFree(device_data);
  cudaFree(device_out);
  cudaFree(device_table);
  cudaFreeHost(pinned_table);
  cudaStreamDestroy(stream);
  return mismatches;
}

using Case = std::tuple<std::int64_t, std::int64_t, SourceKind>;

class FrobulateGpu : public ::testing::TestWithParam<Case> {};

TEST_P(FrobulateGpu, BitwiseEqualToTheCpuKernel) {
  REQUIRE_GPU();
  const auto [count, table_size, source] = GetParam();
  const std::uint64_t seed = count * 131 + table_size * 7 + static_cast<int>(source);
  for (int misalign : {0, 1}) {
    Placement placement;
    EXPECT_EQ(MismatchesForCase<float>(count, table_size, source, misalign, seed, &placement), 0)
        << "float misalign=" << misalign;
    EXPECT_EQ(placement, FrobulatePlacement(table_size, source, count));
    EXPECT_EQ(MismatchesForCase<double>(count, table_size, source, misalign, seed + 1, &placement),
              0)
        << "double misalign=" << misalign;
  }
}

// Every count with every table size and source, except the pairs whose CPU reference would take
// seconds (over 2*10^8 additions). 65,536 and 65,537 elements cross kSmallLaunchElements, where a
// device table bound for the bank is read in place.
std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, std::int64_t{8},
                             std::int64_t{9}, std::int64_t{1000}, kSmallLaunchElements,
                             kSmallLaunchElements + 1, std::int64_t{(1 << 20) + 3}}) {
    for (std::int64_t table_size : {1, 100, 1024, 1025, 4096, 4097, 16384, 16385, 300000}) {
      if (count * table_size > 200'000'000) continue;
      for (SourceKind source :
           {SourceKind::kDevice, SourceKind::kPinnedHost, SourceKind::kPageableHost}) {
        cases.emplace_back(count, table_size, source);
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cases, FrobulateGpu, ::testing::ValuesIn(AllCases()));

TEST(FrobulatePlacement, FollowsTheStrategy) {
  EXPECT_EQ(FrobulatePlacement(100, SourceKind::kPageableHost), Placement::kByValue);
  EXPECT_EQ(FrobulatePlacement(1024, SourceKind::kPinnedHost), Placement::kByValue);
  EXPECT_EQ(FrobulatePlacement(1025, SourceKind::kPinnedHost), Placement::kConstantBank);
  EXPECT_EQ(FrobulatePlacement(100, SourceKind::kDevice), Placement::kGlobalMemory);
  EXPECT_EQ(FrobulatePlacement(1024, SourceKind::kDevice), Placement::kGlobalMemory);
  EXPECT_EQ(FrobulatePlacement(1025, SourceKind::kDevice), Placement::kConstantBank);
  EXPECT_EQ(FrobulatePlacement(16384, SourceKind::kDevice), Placement::kConstantBank);
  EXPECT_EQ(FrobulatePlacement(16385, SourceKind::kDevice), Placement::kGlobalMemory);
  EXPECT_EQ(FrobulatePlacement(16385, SourceKind::kPageableHost), Placement::kGlobalMemory);
  EXPECT_EQ(FrobulatePlacement(kFrobulateMaxTableSize, SourceKind::kPinnedHost),
            Placement::kGlobalMemory);
  // A small launch reads a device table in place instead of copying it into the bank.
  EXPECT_EQ(FrobulatePlacement(1025, SourceKind::kDevice, kSmallLaunchElements),
            Placement::kGlobalMemory);
  EXPECT_EQ(FrobulatePlacement(1025, SourceKind::kDevice, kSmallLaunchElements + 1),
            Placement::kConstantBank);
  EXPECT_EQ(FrobulatePlacement(1025, SourceKind::kPinnedHost, 1), Placement::kConstantBank);
}

TEST(FrobulateErrors, BadTablesAreInvalidArgumentAndTheNextCallWorks) {
  REQUIRE_GPU();
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  float* data = nullptr;
  cudaMalloc(&data, 64 * sizeof(float));
  std::vector<std::int32_t> table(kFrobulateMaxTableSize + 1, 1);
  TableView<std::int32_t> too_long{table.data(), kFrobulateMaxTableSize + 1,
                                   SourceKind::kPageableHost};
  EXPECT_EQ(LaunchFrobulate<float>(stream, data, data, 64, too_long).code(),
            StatusCode::kInvalidArgument);
  TableView<std::int32_t> empty{table.data(), 0, SourceKind::kPageableHost};
  EXPECT_EQ(LaunchFrobulate<float>(stream, data, data, 64, empty).code(),
            StatusCode::kInvalidArgument);
  cudaFree(data);
  cudaStreamDestroy(stream);
  Placement placement;
  EXPECT_EQ(MismatchesForCase<float>(1000, 100, SourceKind::kPageableHost, 0, 5, &placement), 0);
}

// Fault injection exists in test builds only (CONSTMEM_TEST_HOOKS=ON, as the GPU bundle builds).
TEST(FrobulateErrors, AFailedLaunchReleasesItsSlotAndTheNextCallWorks) {
  REQUIRE_GPU();
#ifndef CONSTMEM_TESTING_SWITCHES
  GTEST_SKIP() << "needs a CONSTMEM_TEST_HOOKS build";
#else
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  float* data = nullptr;
  cudaMalloc(&data, 64 * sizeof(float));
  cudaMemset(data, 0, 64 * sizeof(float));
  std::vector<std::int32_t> table(3000, 1);  // a constant-bank table: a lease is held
  TableView<std::int32_t> host{table.data(), 3000, SourceKind::kPageableHost};
  for (int i = 0; i < 8; ++i) {  // more failures than slots: a leaked lease would show
    InjectFaultForTesting(FaultPoint::kKernelLaunch, 1);
    EXPECT_EQ(LaunchFrobulate<float>(stream, data, data, 64, host).code(), StatusCode::kInternal);
  }
  InjectFaultForTesting(FaultPoint::kKernelLaunch, 0);
  cudaStreamSynchronize(stream);
  cudaFree(data);
  cudaStreamDestroy(stream);
  Placement placement;
  EXPECT_EQ(MismatchesForCase<float>(1000, 3000, SourceKind::kPageableHost, 0, 6, &placement), 0);
  EXPECT_EQ(placement, Placement::kConstantBank);
#endif
}

}  // namespace
}  // namespace ops
}  // namespace constmem

// SPDX-License-Identifier: Apache-2.0
// The CPU emulation of CUDA kernels (constmem/testing/emulated_gpu.hpp) shows what a GPU would: a
// double-buffered staging kernel gives the right sums, and the same kernel with its wait for the
// copies, its barrier or its second buffer left out gives wrong ones (the faults the emulation
// exists to catch); a write past the dynamic shared memory is reported.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "constmem/async_copy.cuh"

namespace constmem {
namespace {

enum class Fault { kNone, kNoWait, kNoBarrier, kOneBuffer };

constexpr int kThreads = 64;

// y[t] = the sum of x's tile t (kThreads values), tiles staged into two shared buffers by
// asynchronous copies, the next tile's copies issued before this tile is summed. One barrier a tile
// suffices: the copies issued after it overwrite the buffer of the tile before, which every thread
// finished reading before it reached the barrier.
template <Fault kFault>
__global__ void SumTiles(const float* x, float* y, int tiles) {
  float* const buffers = reinterpret_cast<float*>(DynamicSharedMemory());
  const int t = threadIdx.x;
  auto buffer_of = [](int tile) { return kFault == Fault::kOneBuffer ? 0 : tile % 2; };
  auto stage = [&](int tile) {
    if (tile < tiles) {
      CopyAsync(buffers + buffer_of(tile) * kThreads + t, x + tile * kThreads + t, true);
    }
    CopyAsyncCommit();
  };
  stage(0);
  for (int tile = 0; tile < tiles; ++tile) {
    if (kFault != Fault::kNoWait) CopyAsyncWaitAll();
    if (kFault != Fault::kNoBarrier) __syncthreads();
    stage(tile + 1);
    // Thread t sums the tile from its own position, so that it reads other threads' copies.
    float sum = 0.0f;
    const float* const buffer = buffers + buffer_of(tile) * kThreads;
    for (int i = 0; i < kThreads; ++i) sum += buffer[(t + i) % kThreads];
    if (t == 0) y[tile] = sum;
  }
}

template <Fault kFault>
std::vector<float> SumOnEmulatedGpu(const std::vector<float>& x, int tiles) {
  std::vector<float> y(static_cast<std::size_t>(tiles), -1.0f);
  emulated_gpu::Launch(dim3(1), dim3(kThreads), 2 * kThreads * sizeof(float), SumTiles<kFault>,
                       x.data(), y.data(), tiles);
  return y;
}

TEST(EmulatedGpu, DoubleBufferedCopiesGiveTheSumsAndEachLeftOutSynchronisationBreaksThem) {
  constexpr int kTiles = 9;
  std::vector<float> x(kTiles * kThreads);
  std::iota(x.begin(), x.end(), 1.0f);
  std::vector<float> expected(kTiles);
  for (int tile = 0; tile < kTiles; ++tile) {
    double sum = 0;
    for (int i = 0; i < kThreads; ++i) sum += x[tile * kThreads + i];
    expected[tile] = static_cast<float>(sum);  // exact: integers below 2^24
  }
  EXPECT_EQ(SumOnEmulatedGpu<Fault::kNone>(x, kTiles), expected);
  EXPECT_NE(SumOnEmulatedGpu<Fault::kNoWait>(x, kTiles), expected);
  EXPECT_NE(SumOnEmulatedGpu<Fault::kNoBarrier>(x, kTiles), expected);
  EXPECT_NE(SumOnEmulatedGpu<Fault::kOneBuffer>(x, kTiles), expected);
}

__global__ void WritePast(int bytes) {
  if (threadIdx.x == 0) DynamicSharedMemory()[bytes] = 1;
}

TEST(EmulatedGpu, AWritePastTheDynamicSharedMemoryIsReported) {
  EXPECT_NO_THROW(emulated_gpu::Launch(dim3(2), dim3(32), 256, WritePast, 255));
  EXPECT_THROW(emulated_gpu::Launch(dim3(2), dim3(32), 256, WritePast, 256), std::runtime_error);
}

__global__ void CountBlocksAndThreads(int* seen) {
  seen[blockIdx.x * blockDim.x + threadIdx.x] += 1 + static_cast<int>(gridDim.x);
}

TEST(EmulatedGpu, EveryThreadOfEveryBlockRunsOnce) {
  std::vector<int> seen(3 * 96, 0);
  emulated_gpu::Launch(dim3(3), dim3(96), 0, CountBlocksAndThreads, seen.data());
  EXPECT_EQ(seen, std::vector<int>(3 * 96, 4));
}

}  // namespace
}  // namespace constmem

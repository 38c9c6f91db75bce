// SPDX-License-Identifier: Apache-2.0
// The core's tile staging (constmem/tile_staging.cuh) on the emulated GPU, against plain loops:
// StageSpan puts row[first + i] (zeros outside the row) at to[SpanShift(row, first) + i] for
// elements of 1, 2, 4, 8 and 16 bytes, every alignment of the row and spans that reach past either
// end; StoreSpan writes such a buffer back to exactly row[0, count), as it is or rounded from
// floats to 16-bit data; the word and chunk conversions are ToCompute's and FromCompute's.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "constmem/testing/emulated_gpu.hpp"
#include "constmem/tile_staging.cuh"

namespace constmem {
namespace {

constexpr int kThreads = 32;
constexpr int kBufferBytes = 1024;

struct alignas(16) Wide {  // a 16-byte element
  std::int32_t v[4];
};
bool operator==(const Wide& a, const Wide& b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }
bool operator==(const Float16& a, const Float16& b) { return a.bits == b.bits; }
bool operator==(const BFloat16& a, const BFloat16& b) { return a.bits == b.bits; }

template <class T>
T ElementOf(int i) {
  if constexpr (std::is_same<T, Wide>::value) {
    return Wide{{i, -i, 3 * i, i + 7}};
  } else if constexpr (std::is_same<T, Float16>::value) {
    return Float16{static_cast<std::uint16_t>(0x3c00 + i)};
  } else {
    return static_cast<T>(i % 120 + 1);  // no element is zero
  }
}

// Stages a span of `row` with one warp and copies the whole staged buffer out to `staged`.
template <class T>
__global__ void StageAndRead(const T* row, std::int64_t first, int count, std::int64_t length,
                             T* staged, int staged_elements) {
  T* const buffer = reinterpret_cast<T*>(DynamicSharedMemory());
  StageSpan(buffer, row, first, count, length, threadIdx.x, blockDim.x);
  CopyAsyncCommit();
  CopyAsyncWaitAll();
  __syncthreads();
  for (int i = threadIdx.x; i < staged_elements; i += blockDim.x) staged[i] = buffer[i];
}

template <class T>
void ExpectStagedSpans() {
  constexpr int kLength = 70;
  // A row at every element offset within 16 bytes of an aligned allocation.
  std::vector<Wide> storage(kLength + 16);
  for (int offset = 0; offset < 16 / static_cast<int>(sizeof(T)); ++offset) {
    T* const row = reinterpret_cast<T*>(storage.data()) + offset;
    for (int i = 0; i < kLength; ++i) row[i] = ElementOf<T>(i);
    for (const std::int64_t first : {-20, -3, 0, 5, 33, 60}) {
      for (const int count : {1, 7, 16, 40}) {
        const int shift = SpanShift(row, first);
        const int elements = SpanElements<T>(shift + count);
        ASSERT_LE(elements * static_cast<int>(sizeof(T)), kBufferBytes);
        std::vector<T> staged(static_cast<std::size_t>(elements));
        emulated_gpu::Launch(dim3(1), dim3(kThreads), kBufferBytes, StageAndRead<T>,
                             static_cast<const T*>(row), first, count,
                             static_cast<std::int64_t>(kLength), staged.data(), elements);
        for (int i = 0; i < count; ++i) {
          const std::int64_t e = first + i;
          const T expected = e >= 0 && e < kLength ? row[e] : T{};
          EXPECT_TRUE(staged[shift + i] == expected)
              << sizeof(T) << "-byte elements, row offset " << offset << ", first " << first
              << ", count " << count << ", element " << i;
        }
      }
    }
  }
}

TEST(TileStaging, StageSpanPutsEachElementOfTheSpanAtItsShiftWithZerosOutsideTheRow) {
  ExpectStagedSpans<std::uint8_t>();
  ExpectStagedSpans<Float16>();
  ExpectStagedSpans<float>();
  ExpectStagedSpans<double>();
  ExpectStagedSpans<Wide>();
}

// Fills the staged buffer from `values` and stores it to row[0, count).
template <class T, class From>
__global__ void WriteAndStore(const From* values, int staged_elements, T* row, int count) {
  From* const buffer = reinterpret_cast<From*>(DynamicSharedMemory());
  for (int i = threadIdx.x; i < staged_elements; i += blockDim.x) buffer[i] = values[i];
  __syncthreads();
  StoreSpan(row, static_cast<const From*>(buffer), count, threadIdx.x, blockDim.x);
}

template <class T, class From>
void ExpectStoredSpans() {
  constexpr int kLength = 70;
  constexpr T kUntouched = T{};
  std::vector<Wide> storage(kLength + 16);
  for (int offset = 0; offset < 16 / static_cast<int>(sizeof(T)); ++offset) {
    for (const int count : {1, 5, 16, 41, 64}) {
      T* const row = reinterpret_cast<T*>(storage.data()) + offset;
      for (int i = 0; i < kLength; ++i) row[i] = kUntouched;
      const int shift = SpanShift(row, 0);
      const int elements = SpanElements<T>(shift + count);
      std::vector<From> values(static_cast<std::size_t>(elements));
      for (int i = 0; i < elements; ++i) {
        if constexpr (std::is_same<T, From>::value) {
          values[i] = ElementOf<T>(i + 1);
        } else {
          values[i] = 0.3f * static_cast<float>(i) - 5.0f;  // not every value a 16-bit one
        }
      }
      emulated_gpu::Launch(dim3(1), dim3(kThreads), kBufferBytes, WriteAndStore<T, From>,
                           static_cast<const From*>(values.data()), elements, row, count);
      for (int i = 0; i < kLength; ++i) {
        T expected = kUntouched;
        if (i < count) {
          if constexpr (std::is_same<T, From>::value) {
            expected = values[shift + i];
          } else {
            expected = FromCompute<T>(values[shift + i]);
          }
        }
        EXPECT_TRUE(row[i] == expected) << sizeof(T) << "-byte elements, row offset " << offset
                                        << ", count " << count << ", element " << i;
      }
    }
  }
}

TEST(TileStaging, StoreSpanWritesExactlyTheRowsElementsAsTheyAreOrRoundedFromFloats) {
  ExpectStoredSpans<std::uint8_t, std::uint8_t>();
  ExpectStoredSpans<Float16, Float16>();
  ExpectStoredSpans<float, float>();
  ExpectStoredSpans<double, double>();
  ExpectStoredSpans<Wide, Wide>();
  ExpectStoredSpans<Float16, float>();
  ExpectStoredSpans<BFloat16, float>();
}

__global__ void WidenAndNarrow(const Float16* chunk, float* widened, Float16* narrowed) {
  float v[8];
  WidenChunk(chunk, v);
  for (int i = 0; i < 8; ++i) widened[i] = v[i];
  const float4 lower = make_float4(v[0] * 3, v[1] * 3, v[2] * 3, v[3] * 3);
  const float4 upper = make_float4(v[4] * 3, v[5] * 3, v[6] * 3, v[7] * 3);
  *reinterpret_cast<uint4*>(narrowed) = NarrowChunk<Float16>(lower, upper);
}

TEST(TileStaging, ChunksWidenAndNarrowElementByElementAsToComputeAndFromComputeDo) {
  alignas(16) Float16 chunk[8];
  for (int i = 0; i < 8; ++i) chunk[i] = Float16{static_cast<std::uint16_t>(0x3555 + 977 * i)};
  float widened[8];
  alignas(16) Float16 narrowed[8];
  emulated_gpu::Launch(dim3(1), dim3(1), 0, WidenAndNarrow, static_cast<const Float16*>(chunk),
                       widened, narrowed);
  for (int i = 0; i < 8; ++i) {
    const float x = ToCompute<float>(chunk[i]);
    EXPECT_EQ(widened[i], x) << i;
    EXPECT_EQ(narrowed[i].bits, FromCompute<Float16>(x * 3).bits) << i;
  }
}

}  // namespace
}  // namespace constmem

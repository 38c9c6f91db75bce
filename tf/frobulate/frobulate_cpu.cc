// SPDX-License-Identifier: Apache-2.0
// Frobulate's CPU kernel (see frobulate_cpu.h). One template body, instantiated per instruction
// set.
#include "frobulate/frobulate_cpu.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if CONSTMEM_CPU_X86
#include <immintrin.h>
#endif

namespace constmem {
namespace ops {
namespace {

// Ranges at least this large are written with streaming stores where the CPU has them.
constexpr std::int64_t kStreamingBytes = std::int64_t{4} << 20;

// kAccumulators vectors of elements stay in registers while the whole table streams past: each
// table entry is broadcast once and added to every accumulator. Enough independent accumulators
// hide the add latency (two adds per cycle at four cycles of latency need eight).
// Stores one vector. A streaming variant writes around the cache: the output of a large call would
// only evict the input about to be read, and a plain store first reads the line it writes.
struct PlainStore {
  template <class V, class T>
  static void Store(T* to, const V& value) {
    std::memcpy(to, &value, sizeof(V));
  }
  static void Fence() {}
};

template <class T, int kBytes, int kAccumulators, class Storer = PlainStore>
__attribute__((always_inline)) inline void FrobulateTiles(const T* data, T* out, std::int64_t count,
                                                          const T* table, std::int64_t table_size) {
  using V = typename cpu::Vector<T, kBytes>::type;
  constexpr int kLanes = cpu::Vector<T, kBytes>::kLanes;
  constexpr std::int64_t kTile = std::int64_t{kLanes} * kAccumulators;
  auto tile = [&](const T* in, T* result, auto store) __attribute__((always_inline)) {
    V acc[kAccumulators];
#pragma GCC unroll 64
    for (int k = 0; k < kAccumulators; ++k) std::memcpy(&acc[k], in + k * kLanes, kBytes);
    for (std::int64_t j = 0; j < table_size; ++j) {
      const V entry = V{} + table[j];
#pragma GCC unroll 64
      for (int k = 0; k < kAccumulators; ++k) acc[k] += entry;
    }
#pragma GCC unroll 64
    for (int k = 0; k < kAccumulators; ++k) decltype(store)::Store(result + k * kLanes, acc[k]);
  };
  std::int64_t i = 0;
  for (; i + kTile <= count; i += kTile) {
    // The data two tiles ahead, requested now so that it is in cache when its turn comes.
    for (int line = 0; line < kTile * static_cast<int>(sizeof(T)); line += 64) {
      __builtin_prefetch(reinterpret_cast<const char*>(data + i + 2 * kTile) + line);
    }
    tile(data + i, out + i, Storer());
  }
  Storer::Fence();
  if (i < count) {  // the rest, through a zero-padded tile of its own
    T padded[kTile] = {};
    const std::int64_t rest = count - i;
    std::memcpy(padded, data + i, rest * sizeof(T));
    tile(padded, padded, PlainStore());
    std::memcpy(out + i, padded, rest * sizeof(T));
  }
}

template <class T>
void Portable(const T* data, T* out, std::int64_t count, const T* table, std::int64_t size) {
  FrobulateTiles<T, 16, 8>(data, out, count, table, size);
}

#if CONSTMEM_CPU_X86
// 16 ymm registers: 12 accumulators, the broadcast entry, and room to spare.
template <class T>
CONSTMEM_TARGET_AVX2 void Avx2(const T* data, T* out, std::int64_t count, const T* table,
                               std::int64_t size) {
  FrobulateTiles<T, 32, 12>(data, out, count, table, size);
}

#if CONSTMEM_CPU_X86
struct StreamingStore512 {
  template <class V, class T>
  CONSTMEM_TARGET_AVX512 static void Store(T* to, const V& value) {
    if constexpr (sizeof(T) == 4) {
      _mm512_stream_ps(reinterpret_cast<float*>(to), reinterpret_cast<const __m512&>(value));
    } else {
      _mm512_stream_pd(reinterpret_cast<double*>(to), reinterpret_cast<const __m512d&>(value));
    }
  }
  static void Fence() { _mm_sfence(); }
};
#endif

// 32 zmm registers: 24 accumulators (16 left the adders idle a third of the time at 100
// entries), the entry, and room for the loop.
template <class T>
CONSTMEM_TARGET_AVX512 void Avx512(const T* data, T* out, std::int64_t count, const T* table,
                                   std::int64_t size) {
  // Streaming stores need 64-byte alignment and pay off once the output outgrows the caches.
  const bool stream = reinterpret_cast<std::uintptr_t>(out) % 64 == 0 &&
                      count * static_cast<std::int64_t>(sizeof(T)) >= kStreamingBytes;
  if (stream) return FrobulateTiles<T, 64, 24, StreamingStore512>(data, out, count, table, size);
  FrobulateTiles<T, 64, 24>(data, out, count, table, size);
}
#endif

}  // namespace

template <class T>
void FrobulateCpuRange(const T* data, T* out, std::int64_t begin, std::int64_t end, const T* table,
                       std::int64_t table_size, cpu::Isa isa) {
  const std::int64_t count = end - begin;
  if (count <= 0) return;
  data += begin;
  out += begin;
  switch (isa) {
#if CONSTMEM_CPU_X86
    case cpu::Isa::kAvx512:
      return Avx512(data, out, count, table, table_size);
    case cpu::Isa::kAvx2:
      return Avx2(data, out, count, table, table_size);
#endif
    default:
      return Portable(data, out, count, table, table_size);
  }
}

template void FrobulateCpuRange<float>(const float*, float*, std::int64_t, std::int64_t,
                                       const float*, std::int64_t, cpu::Isa);
template void FrobulateCpuRange<double>(const double*, double*, std::int64_t, std::int64_t,
                                        const double*, std::int64_t, cpu::Isa);

}  // namespace ops
}  // namespace constmem

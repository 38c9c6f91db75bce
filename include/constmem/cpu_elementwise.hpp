// SPDX-License-Identifier: Apache-2.0
// clang-format off
// The CPU counterpart of elementwise.cuh: every element walks the whole table in order,
//
//   state = Op::Start(x, table[0]);  for j in 1..n-1: Op::Step(state, table[j]);
//   y = state.y
//
// vectorised and register-tiled: a tile of elements stays in vector registers while the table
// streams past, each entry broadcast once and applied to every accumulator. Each element still gets
// its steps one by one in table order, so the result is bitwise equal to the scalar definition;
// the speed comes from independent accumulators hiding the latency, not from reordering.
//
// An op supplies the steps on GCC vector types (cpu::Vector) and how many accumulators to keep per
// instruction set, indexed by cpu::Isa:
//
//   struct FrobulateCpuStep {
//     template <class V> struct State { V y; };  // y: the result so far
//     static constexpr int kAccumulators[] = {8, 12, 24};  // portable, AVX2, AVX-512
//     template <class V>
//     static void Start(State<V>& s, const V& x, const V& first) { s.y = x + first; }
//     template <class V> static void Step(State<V>& s, const V& entry) { s.y += entry; }
//   };
//
//   ElementwiseTableCpu<FrobulateCpuStep>(data, out, begin, end, table, table_size, isa);
//
// Vectors pass by reference: a wide vector by value outside a function compiled for its
// instruction set would change the calling convention.
//
// Host-only; no CUDA and no TensorFlow include.
// clang-format on
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "constmem/cpu_isa.hpp"

#if CONSTMEM_CPU_X86
#include <immintrin.h>
#endif

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {
namespace cpu {

// y = a * b + c with one rounding, lane by lane, on any vector width: what a kernel needs to match
// a GPU's fma bit for bit. Hardware FMA under AVX2 and AVX-512; std::fma (exact, slower where the
// CPU has no FMA) otherwise. Vectors pass by reference (see above); the kernels below are
// flattened, so that this inlines into code compiled for the same instruction set.
// Every lane set to `*value`, bit for bit (`V{} + *value` would turn -0 into +0) and, on x86, as
// one broadcast load rather than an add and a shuffle on the ports the arithmetic needs.
template <class V, class T, std::size_t... kLane>
__attribute__((always_inline)) inline void BroadcastLanes(V& v, T value,
                                                          std::index_sequence<kLane...>) {
  v = V{((void)kLane, value)...};
}
template <class V, class T>
__attribute__((always_inline)) inline void Broadcast(V& v, const T* value) {
  BroadcastLanes(v, *value, std::make_index_sequence<sizeof(V) / sizeof(T)>{});
}

template <class V>
inline void Fma(V& y, const V& a, const V& b, const V& c) {
  // Built whole, then assigned: a lane-by-lane write to y reads y's other lanes, which GCC then
  // reports as maybe uninitialised where inlining hides y's initialisation.
  V result = {};
  for (int i = 0; i < static_cast<int>(sizeof(V) / sizeof(a[0])); ++i)
    result[i] = std::fma(a[i], b[i], c[i]);
  y = result;
}
#if CONSTMEM_CPU_X86
#define CONSTMEM_DETAIL_FMA(target, V, Native, intrinsic)                                       \
  template <>                                                                                   \
  target inline void Fma(V& y, const V& a, const V& b, const V& c) {                            \
    y = reinterpret_cast<V>(intrinsic(reinterpret_cast<Native>(a), reinterpret_cast<Native>(b), \
                                      reinterpret_cast<Native>(c)));                            \
  }
using Float8 = Vector<float, 32>::type;
using Double4 = Vector<double, 32>::type;
using Float16 = Vector<float, 64>::type;
using Double8 = Vector<double, 64>::type;
CONSTMEM_DETAIL_FMA(CONSTMEM_TARGET_AVX2, Float8, __m256, _mm256_fmadd_ps)
CONSTMEM_DETAIL_FMA(CONSTMEM_TARGET_AVX2, Double4, __m256d, _mm256_fmadd_pd)
CONSTMEM_DETAIL_FMA(CONSTMEM_TARGET_AVX512, Float16, __m512, _mm512_fmadd_ps)
CONSTMEM_DETAIL_FMA(CONSTMEM_TARGET_AVX512, Double8, __m512d, _mm512_fmadd_pd)
#undef CONSTMEM_DETAIL_FMA
// GCC builds the generic broadcast lane by lane (masked loads) in these functions.
#define CONSTMEM_DETAIL_BROADCAST(target, V, T, intrinsic) \
  template <>                                              \
  target inline void Broadcast(V& v, const T* value) {     \
    const auto native = intrinsic(*value);                 \
    std::memcpy(&v, &native, sizeof(V));                   \
  }
CONSTMEM_DETAIL_BROADCAST(CONSTMEM_TARGET_AVX2, Float8, float, _mm256_set1_ps)
CONSTMEM_DETAIL_BROADCAST(CONSTMEM_TARGET_AVX2, Double4, double, _mm256_set1_pd)
CONSTMEM_DETAIL_BROADCAST(CONSTMEM_TARGET_AVX512, Float16, float, _mm512_set1_ps)
CONSTMEM_DETAIL_BROADCAST(CONSTMEM_TARGET_AVX512, Double8, double, _mm512_set1_pd)
#undef CONSTMEM_DETAIL_BROADCAST
#endif

namespace detail {

// Ranges at least this large are written with streaming stores where the CPU has them.
constexpr std::int64_t kStreamingBytes = std::int64_t{4} << 20;

// Stores one vector. The streaming variant writes around the cache: the output of a large call
// would only evict the input about to be read, and a plain store first reads the line it writes.
struct PlainStore {
  template <class V, class T>
  static void Store(T* to, const V& value) {
    std::memcpy(to, &value, sizeof(V));
  }
  static void Fence() {}
};

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

template <class Op, class T, int kBytes, int kAccumulators, class Storer = PlainStore>
__attribute__((always_inline)) inline void ElementwiseTiles(const T* data, T* out,
                                                            std::int64_t count, const T* table,
                                                            std::int64_t table_size) {
  using V = typename Vector<T, kBytes>::type;
  using State = typename Op::template State<V>;
  constexpr int kLanes = Vector<T, kBytes>::kLanes;
  constexpr std::int64_t kTile = std::int64_t{kLanes} * kAccumulators;
  auto tile = [&](const T* in, T* result, auto store) __attribute__((always_inline)) {
    State state[kAccumulators];
    V first;
    Broadcast(first, table);
#pragma GCC unroll 64
    for (int k = 0; k < kAccumulators; ++k) {
      V x;
      std::memcpy(&x, in + k * kLanes, kBytes);
      Op::Start(state[k], x, first);
    }
    for (std::int64_t j = 1; j < table_size; ++j) {
      V entry;
      Broadcast(entry, table + j);
#pragma GCC unroll 64
      for (int k = 0; k < kAccumulators; ++k) Op::Step(state[k], entry);
    }
#pragma GCC unroll 64
    for (int k = 0; k < kAccumulators; ++k) {
      decltype(store)::Store(result + k * kLanes, state[k].y);
    }
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

template <class Op, class T>
__attribute__((flatten)) void ElementwisePortable(const T* data, T* out, std::int64_t count,
                                                  const T* table, std::int64_t size) {
  ElementwiseTiles<Op, T, 16, Op::kAccumulators[0]>(data, out, count, table, size);
}

#if CONSTMEM_CPU_X86
template <class Op, class T>
CONSTMEM_TARGET_AVX2
    __attribute__((flatten)) void ElementwiseAvx2(const T* data, T* out, std::int64_t count,
                                                  const T* table, std::int64_t size) {
  ElementwiseTiles<Op, T, 32, Op::kAccumulators[1]>(data, out, count, table, size);
}

template <class Op, class T>
CONSTMEM_TARGET_AVX512 __attribute__((flatten)) void ElementwiseAvx512(const T* data, T* out,
                                                                       std::int64_t count,
                                                                       const T* table,
                                                                       std::int64_t size) {
  // Streaming stores need 64-byte alignment and pay off once the output outgrows the caches.
  const bool stream = reinterpret_cast<std::uintptr_t>(out) % 64 == 0 &&
                      count * static_cast<std::int64_t>(sizeof(T)) >= kStreamingBytes;
  if (stream) {
    return ElementwiseTiles<Op, T, 64, Op::kAccumulators[2], StreamingStore512>(data, out, count,
                                                                                table, size);
  }
  ElementwiseTiles<Op, T, 64, Op::kAccumulators[2]>(data, out, count, table, size);
}
#endif

}  // namespace detail

// out[i] for i in [begin, end) from a table already in T. `isa` must be supported
// (IsaSupported); BestIsa() is the usual choice.
template <class Op, class T>
void ElementwiseTableCpu(const T* data, T* out, std::int64_t begin, std::int64_t end,
                         const T* table, std::int64_t table_size, Isa isa) {
  const std::int64_t count = end - begin;
  if (count <= 0 || table_size < 1) return;
  data += begin;
  out += begin;
  switch (isa) {
#if CONSTMEM_CPU_X86
    case Isa::kAvx512:
      return detail::ElementwiseAvx512<Op>(data, out, count, table, table_size);
    case Isa::kAvx2:
      return detail::ElementwiseAvx2<Op>(data, out, count, table, table_size);
#endif
    default:
      return detail::ElementwisePortable<Op>(data, out, count, table, table_size);
  }
}

}  // namespace cpu
}  // namespace constmem
#pragma GCC visibility pop

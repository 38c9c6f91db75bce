// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's CPU kernel (see separable_filter_cpu.h). Both layouts are rows of contiguous
// elements: W pixels of one channel (planes) or W pixels of C interleaved channels (channels-last),
// a tap along W then being C elements further on. A unit (a band of rows of one plane or image)
// computes the rows of tmp its outputs need, each from a zero-padded or folded copy of its input
// row converted to the compute type, into 64-byte aligned buffers, then its output rows from them,
// converted and stored straight from the registers. A row of tmp outside the image is tmp of the
// row it folds to (or zeros), so each distinct input row is filtered once per unit however far the
// column taps reach: a filter much taller than the image costs no more rows of tmp than the image
// has. Each pass keeps a tile of consecutive elements in vector registers while the taps stream
// past: every tap is broadcast once and applied to every accumulator, so each element still gets
// its FMAs one by one in tap order. The column pass computes several output rows at once (their
// rows of tmp overlap: each loaded vector feeds an FMA of each), and uint8 rows of short filters
// are converted tap by tap inside the row pass rather than into a float copy first. float16 and
// bfloat16 rows are always converted into the float copy, exactly (numeric.hpp's conversions lane
// by lane), so that the passes are the float32 kernel's own, operation for operation; each output
// is rounded to nearest even as it is stored.
#include "separable_filter/separable_filter_cpu.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "constmem/cpu_elementwise.hpp"

namespace constmem {
namespace ops {
namespace {

// The rows a unit outputs: enough that the kh - 1 rows of tmp it computes beyond them cost little
// (no more rows of tmp than the image has, however tall the filter).
std::int64_t BandRows(const SeparableShape& s) {
  return std::max<std::int64_t>(64, 4 * std::min(s.kh, s.height));
}

// Both layouts as `planes` planes of `rows` rows of `elements` contiguous values, `stride` values
// between a pixel and the next along W; planes / images of them per image.
struct RowsView {
  std::int64_t planes, rows, width, stride, elements, planes_per_image;
};

RowsView ViewOf(const SeparableShape& s) {
  RowsView v;
  const bool planes = s.layout == SeparableLayout::kPlanes;
  v.planes = planes ? s.images * s.channels : s.images;
  v.rows = s.height;
  v.width = s.width;
  v.stride = planes ? 1 : s.channels;
  v.elements = s.width * v.stride;
  v.planes_per_image = planes ? s.channels : 1;
  return v;
}

// w = the bytes at p[0, lanes of IntV) as int32. GCC's generic conversion of a byte vector
// extracts the bytes one by one; x86 has one instruction for it. Vectors pass by reference (see
// cpu_elementwise.hpp).
template <class IntV>
__attribute__((always_inline)) inline void WidenBytes(IntV& w, const std::uint8_t* p) {
  typename cpu::Vector<std::uint8_t, sizeof(IntV) / 4>::type narrow;
  std::memcpy(&narrow, p, sizeof(narrow));
  w = __builtin_convertvector(narrow, IntV);
}
#if CONSTMEM_CPU_X86
using Int8 = cpu::Vector<std::int32_t, 32>::type;
using Int16 = cpu::Vector<std::int32_t, 64>::type;
template <>
CONSTMEM_TARGET_AVX2 inline void WidenBytes<Int8>(Int8& w, const std::uint8_t* p) {
  const __m256i wide = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  std::memcpy(&w, &wide, sizeof(w));
}
template <>
CONSTMEM_TARGET_AVX512 inline void WidenBytes<Int16>(Int16& w, const std::uint8_t* p) {
  // The masked form: GCC 12 warns of the unmasked one's undefined source.
  const __m512i wide =
      _mm512_maskz_cvtepu8_epi32(0xffff, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  std::memcpy(&w, &wide, sizeof(w));
}
#endif

// to[0, lanes of IntV) = the int32 values in [0, 255] of `w` as bytes.
template <class IntV>
__attribute__((always_inline)) inline void NarrowToBytes(std::uint8_t* to, const IntV& w) {
  using Bytes = typename cpu::Vector<std::uint8_t, sizeof(IntV) / 4>::type;
  const Bytes narrow = __builtin_convertvector(w, Bytes);
  std::memcpy(to, &narrow, sizeof(narrow));
}
#if CONSTMEM_CPU_X86
// AVX2 has no truncating narrow (GCC's generic one goes byte by byte): two saturating packs, exact
// for values in [0, 255], then the two 128-bit lanes' four bytes side by side.
template <>
CONSTMEM_TARGET_AVX2 inline void NarrowToBytes<Int8>(std::uint8_t* to, const Int8& w) {
  __m256i wide;
  std::memcpy(&wide, &w, sizeof(wide));
  const __m256i bytes = _mm256_packus_epi16(_mm256_packus_epi32(wide, wide), wide);
  const __m128i eight =
      _mm_unpacklo_epi32(_mm256_castsi256_si128(bytes), _mm256_extracti128_si256(bytes, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(to), eight);
}
#endif

// to[0, lanes of V) = the float values of `acc` rounded half to even and clamped to [0, 255] (NaN
// to 0): FromCompute<std::uint8_t> lane by lane.
template <class V, class IntV>
__attribute__((always_inline)) inline void RoundToBytes(std::uint8_t* to, const V& acc) {
  const V high = V{} + 255.0f, zero = V{}, magic = V{} + 8388608.0f;
  V f = acc > high ? high : acc;
  f = f >= zero ? f : zero;
  const V rounded = f + magic;
  NarrowToBytes(to, __builtin_convertvector(rounded - magic, IntV));
}
#if CONSTMEM_CPU_X86
// The same in four instructions: the minimum with 255 keeps a NaN (vminps returns its second
// operand then), the conversion rounds half to even and makes a NaN or -inf INT_MIN, the maximum
// with 0 takes those and the negatives to 0, and the narrowing stores the bytes.
using Floats16 = cpu::Vector<float, 64>::type;
using Floats8 = cpu::Vector<float, 32>::type;
template <>
CONSTMEM_TARGET_AVX512 inline void RoundToBytes<Floats16, Int16>(std::uint8_t* to,
                                                                 const Floats16& acc) {
  // The masked forms: GCC 12 warns of the unmasked ones' undefined sources.
  constexpr __mmask16 kAll = 0xffff;
  __m512 v;
  std::memcpy(&v, &acc, sizeof(v));
  const __m512 low = _mm512_maskz_min_ps(kAll, _mm512_set1_ps(255.0f), v);
  const __m512i ints = _mm512_maskz_max_epi32(
      kAll,
      _mm512_maskz_cvt_roundps_epi32(kAll, low, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
      _mm512_setzero_si512());
  _mm_storeu_si128(reinterpret_cast<__m128i*>(to), _mm512_maskz_cvtepi32_epi8(kAll, ints));
}
template <>
CONSTMEM_TARGET_AVX2 inline void RoundToBytes<Floats8, Int8>(std::uint8_t* to, const Floats8& acc) {
  __m256 v;
  std::memcpy(&v, &acc, sizeof(v));
  const __m256 low = _mm256_round_ps(_mm256_min_ps(_mm256_set1_ps(255.0f), v),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256i ints = _mm256_max_epi32(_mm256_cvttps_epi32(low), _mm256_setzero_si256());
  Int8 w;
  std::memcpy(&w, &ints, sizeof(w));
  NarrowToBytes(to, w);
}
#endif

// float16 and bfloat16: held as their bits, computed in float32.
template <class In>
constexpr bool kSixteenBit = std::is_same<In, Float16>::value || std::is_same<In, BFloat16>::value;

// to = the lanes of V (float) of the 16-bit floats at `from`: ToCompute<float> lane by lane, with
// numeric.hpp's operations (its branches as selects), so exact for every value, NaN's payload too.
template <class In, class V>
__attribute__((always_inline)) inline void WidenSixteenBit(V& to, const In* from) {
  constexpr int kLanes = static_cast<int>(sizeof(V) / 4);
  using U16 = typename cpu::Vector<std::uint16_t, kLanes * 2>::type;
  using U = typename cpu::Vector<std::uint32_t, kLanes * 4>::type;
  U16 narrow;
  std::memcpy(&narrow, from, sizeof(narrow));
  const U h = __builtin_convertvector(narrow, U);
  U o;
  if constexpr (std::is_same<In, BFloat16>::value) {
    o = h << 16;
  } else {  // detail::HalfBitsToFloat
    constexpr std::uint32_t kShiftedExp = 0x7c00u << 13;
    o = (h & 0x7fffu) << 13;
    const U exp = o & kShiftedExp;
    o += (127u - 15u) << 23;
    // Zero and subnormal: renormalised by the FPU.
    const U renormalise = o + (1u << 23);
    V renormalised;
    std::memcpy(&renormalised, &renormalise, sizeof(V));
    const U magic = U{} + (113u << 23);
    V magic_value;
    std::memcpy(&magic_value, &magic, sizeof(V));
    renormalised -= magic_value;
    U renormalised_bits;
    std::memcpy(&renormalised_bits, &renormalised, sizeof(V));
    o = exp == kShiftedExp ? o + ((128u - 16u) << 23) : o;  // Inf and NaN
    o = exp == 0u ? renormalised_bits : o;
    o |= (h & 0x8000u) << 16;
  }
  std::memcpy(&to, &o, sizeof(V));
}

// to[0, lanes of V) = the float lanes of `v` rounded to nearest even as In: FromCompute<In> lane by
// lane, with numeric.hpp's operations (FloatToHalfBits, FloatToBFloat16Bits; branches as selects).
template <class In, class V>
__attribute__((always_inline)) inline void NarrowSixteenBit(In* to, const V& v) {
  constexpr int kLanes = static_cast<int>(sizeof(V) / 4);
  using U16 = typename cpu::Vector<std::uint16_t, kLanes * 2>::type;
  using U = typename cpu::Vector<std::uint32_t, kLanes * 4>::type;
  using I = typename cpu::Vector<std::int32_t, kLanes * 4>::type;
  U f;
  std::memcpy(&f, &v, sizeof(V));
  U o;
  if constexpr (std::is_same<In, BFloat16>::value) {
    // Signed comparisons: the magnitudes are below 2^31.
    const I magnitude = reinterpret_cast<I>(f & 0x7fffffffu);
    const U rounded = (f + 0x7fffu + ((f >> 16) & 1u)) >> 16;
    o = magnitude > 0x7f800000 ? (f >> 16) | 0x40u : rounded;
  } else {
    const U sign = f & 0x80000000u;
    f ^= sign;
    const I magnitude = reinterpret_cast<I>(f);
    // Below 2^-14 (half's subnormals, and zero): rounded by the FPU's addition.
    const U kMagic = U{} + (((127u - 15u) + (23u - 10u) + 1u) << 23);
    V small, magic_value;
    std::memcpy(&small, &f, sizeof(V));
    std::memcpy(&magic_value, &kMagic, sizeof(V));
    small += magic_value;
    U small_bits;
    std::memcpy(&small_bits, &small, sizeof(V));
    small_bits -= kMagic;
    const U normal = (f + (((15u - 127u) << 23) + 0xfffu) + ((f >> 13) & 1u)) >> 13;
    const U huge = magnitude > 0x7f800000 ? U{} + 0x7e00u : U{} + 0x7c00u;
    o = magnitude >= static_cast<std::int32_t>((127u + 16u) << 23)
            ? huge
            : (magnitude < static_cast<std::int32_t>(113u << 23) ? small_bits : normal);
    o |= sign >> 16;
  }
  const U16 narrow = __builtin_convertvector(o, U16);
  std::memcpy(to, &narrow, sizeof(narrow));
}

template <class In, class T, int kBytes, int kAccumulators>
struct Kernel {
  using V = typename cpu::Vector<T, kBytes>::type;
  static constexpr int kLanes = cpu::Vector<T, kBytes>::kLanes;
  static constexpr std::int64_t kTile = std::int64_t{kLanes} * kAccumulators;
  // kLanes values of int, for the conversion to and from uint8.
  using IntV = typename cpu::Vector<std::int32_t, kLanes * 4>::type;

  // to[0, n) = in[0, n) converted to T, whole vectors at a time.
  __attribute__((always_inline)) static inline void Convert(const In* in, std::int64_t n, T* to) {
    if constexpr (std::is_same<In, T>::value) {
      std::memcpy(to, in, static_cast<std::size_t>(n) * sizeof(T));
    } else if constexpr (kSixteenBit<In>) {
      std::int64_t e = 0;
      for (; e + kLanes <= n; e += kLanes) {
        V wide;
        WidenSixteenBit(wide, in + e);
        std::memcpy(to + e, &wide, kBytes);
      }
      for (; e < n; ++e) to[e] = ToCompute<T>(in[e]);
    } else {
      std::int64_t e = 0;
      for (; e + kLanes <= n; e += kLanes) {
        IntV bytes;
        WidenBytes(bytes, in + e);
        const V wide = __builtin_convertvector(bytes, V);
        std::memcpy(to + e, &wide, kBytes);
      }
      for (; e < n; ++e) to[e] = ToCompute<T>(in[e]);
    }
  }

  // The first n (<= kLanes) values of `acc` to `out` as In: FromCompute lane by lane, the same
  // operations in the same order.
  __attribute__((always_inline)) static inline void Store(const V& acc, In* out, std::int64_t n) {
    In values[kLanes];
    if constexpr (std::is_same<In, T>::value) {
      std::memcpy(values, &acc, kBytes);
    } else if constexpr (kSixteenBit<In>) {
      NarrowSixteenBit(values, acc);
    } else {
      RoundToBytes<V, IntV>(values, acc);
    }
    if (n == kLanes) {
      std::memcpy(out, values, sizeof(values));
    } else {
      std::memcpy(out, values, static_cast<std::size_t>(n) * sizeof(In));
    }
  }

  // One vector of samples at `at` (of T, or of In converted to T).
  template <class Sample>
  __attribute__((always_inline)) static inline void Load(V& sample, const Sample* at) {
    if constexpr (std::is_same<Sample, T>::value) {
      std::memcpy(&sample, at, kBytes);
    } else {
      IntV bytes;
      WidenBytes(bytes, at);
      sample = __builtin_convertvector(bytes, V);
    }
  }

  // out[0, tiles * kTile): out[e] = sum_j fma(in[e + j * step], taps[j], .) from +0: the row pass,
  // stepping a pixel along W (1 or C elements), its samples of T or of In converted to T.
  template <class Sample>
  __attribute__((always_inline)) static inline void Pass(const Sample* in, std::int64_t step,
                                                         const T* taps, std::int64_t count,
                                                         std::int64_t tiles, T* out) {
    for (std::int64_t t = 0; t < tiles; ++t) {
      V acc[kAccumulators] = {};
      const Sample* at = in + t * kTile;
      for (std::int64_t j = 0; j < count; ++j) {
        V tap;
        cpu::Broadcast(tap, taps + j);
#pragma GCC unroll 16
        for (int a = 0; a < kAccumulators; ++a) {
          V sample;
          Load(sample, at + j * step + a * kLanes);
          cpu::Fma(acc[a], sample, tap, acc[a]);
        }
      }
#pragma GCC unroll 16
      for (int a = 0; a < kAccumulators; ++a)
        std::memcpy(out + t * kTile + a * kLanes, &acc[a], kBytes);
    }
  }

  // The column pass computes kGroupRows output rows at once, kGroupAccumulators vectors a row.
  // Their product, with a tap a row and a sample, must fit the registers: 32 of AVX-512, 16 of
  // AVX2 and SSE. Each row of tmp loaded then feeds that many rows' FMAs: at 3 taps, 4 rows load 6
  // rows of tmp where one at a time loads 12 (on Zen 4 the whole filter is about 20% faster at
  // every size so). The last rows of a band, and short filters, go one row at a time.
  static constexpr int kGroupRows = kBytes == 64 ? 4 : 2;
  static constexpr int kGroupAccumulators = 4;
  static constexpr std::int64_t kGroupTile = std::int64_t{kLanes} * kGroupAccumulators;
  static_assert(kTile % kGroupTile == 0, "rows of tmp hold whole group tiles");
  template <int kRows>
  using GroupAcc = V[kRows][kGroupAccumulators];

  // One row of tmp in ColumnPass, `tap` its tap for output row 0: for output rows r in
  // [kFrom, kTo), acc[r] = fma(row, tap[-r], acc[r]).
  template <int kFrom, int kTo, int kRows>
  __attribute__((always_inline)) static inline void GroupRow(const T* row, const T* tap,
                                                             GroupAcc<kRows>& acc) {
    V taps[kRows] = {};
#pragma GCC unroll 8
    for (int r = kFrom; r < kTo; ++r) cpu::Broadcast(taps[r], tap - r);
#pragma GCC unroll 8
    for (int a = 0; a < kGroupAccumulators; ++a) {
      V sample;
      std::memcpy(&sample, row + a * kLanes, kBytes);
#pragma GCC unroll 8
      for (int r = kFrom; r < kTo; ++r) cpu::Fma(acc[r][a], sample, taps[r], acc[r][a]);
    }
  }

  // The rows of tmp that only a group's first output rows read (GroupPrologue), or only its last
  // (GroupEpilogue).
  // (For one row at a time both are empty.)
  template <int kRows, std::size_t... kI>
  __attribute__((always_inline)) static inline void GroupPrologue(
      [[maybe_unused]] const T* const* rows, [[maybe_unused]] std::int64_t at,
      [[maybe_unused]] const T* taps, [[maybe_unused]] GroupAcc<kRows>& acc,
      std::index_sequence<kI...>) {
    (GroupRow<0, kI + 1, kRows>(rows[kI] + at, taps + kI, acc), ...);
  }
  template <int kRows, std::size_t... kI>
  __attribute__((always_inline)) static inline void GroupEpilogue(
      [[maybe_unused]] const T* const* rows, [[maybe_unused]] std::int64_t at,
      [[maybe_unused]] const T* taps, [[maybe_unused]] std::int64_t count,
      [[maybe_unused]] GroupAcc<kRows>& acc, std::index_sequence<kI...>) {
    (GroupRow<kI + 1, kRows, kRows>(rows[count + kI] + at, taps + count + kI, acc), ...);
  }

  // The column pass of kRows consecutive output rows, `pitch` apart, over [0, n): out row r's
  // element e = sum_j fma(rows[r + j][e], taps[j], .) from +0, j ascending, stored as In; the rows
  // of tmp hold whole group tiles (a partial last tile's other lanes are computed, not stored).
  // count >= kRows - 1.
  template <int kRows>
  __attribute__((always_inline)) static inline void ColumnPass(const T* const* rows, const T* taps,
                                                               std::int64_t count, std::int64_t n,
                                                               In* out, std::int64_t pitch) {
    constexpr auto kEdge = std::make_index_sequence<kRows - 1>();
    // One group tile at `at`, its accumulators handed to store(acc): the partial last tile stores
    // from a copy of its own, so that the whole tiles' stay in registers.
    auto tile = [&](std::int64_t at, auto store) __attribute__((always_inline)) {
      GroupAcc<kRows> acc = {};
      GroupPrologue<kRows>(rows, at, taps, acc, kEdge);
      for (std::int64_t j = kRows - 1; j < count; ++j) {
        GroupRow<0, kRows, kRows>(rows[j] + at, taps + j, acc);
      }
      GroupEpilogue<kRows>(rows, at, taps, count, acc, kEdge);
      store(acc);
    };
    std::int64_t at = 0;
    for (; at + kGroupTile <= n; at += kGroupTile) {
      tile(at, [&](const GroupAcc<kRows>& acc) __attribute__((always_inline)) {
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
          for (int a = 0; a < kGroupAccumulators; ++a) {
            Store(acc[r][a], out + r * pitch + at + a * kLanes, kLanes);
          }
        }
      });
    }
    if (at < n) {
      tile(at, [&](const GroupAcc<kRows>& acc) __attribute__((always_inline)) {
        for (int r = 0; r < kRows; ++r) {
          for (std::int64_t a = 0; a * kLanes < n - at; ++a) {
            Store(acc[r][a], out + r * pitch + at + a * kLanes,
                  std::min<std::int64_t>(kLanes, n - at - a * kLanes));
          }
        }
      });
    }
  }
};

// `rows` rows of `pitch` values of T, zeros, each starting on a 64-byte boundary (pitch is whole
// tiles of at least 64 bytes), so that the passes' whole-vector accesses to them split no line.
template <class T>
class AlignedRows {
 public:
  AlignedRows(std::int64_t rows, std::int64_t pitch)
      : pitch_(pitch), values_(static_cast<std::size_t>(rows * pitch + 64 / sizeof(T)), T(0)) {
    const auto address = reinterpret_cast<std::uintptr_t>(values_.data());
    first_ = values_.data() + (64 - address % 64) % 64 / sizeof(T);
  }
  T* Row(std::int64_t r) { return first_ + r * pitch_; }

 private:
  std::int64_t pitch_;
  std::vector<T> values_;
  T* first_;
};

// uint8 rows of filters up to this many taps wide are converted to float tap by tap inside the row
// pass, not once into a float copy of the row: for few taps, storing and reloading that copy
// costs more than the conversions it saves (8% at 3 taps on Zen 4, equal at 7).
constexpr std::int64_t kConvertPerTapMostTaps = 7;

// tmp_row[0, tiles * kTile) from input row `row`, through a zero-padded or folded copy of it in
// `padded` (of Sample: In, or In converted to T). Padded pixel p is source pixel p - cw: the row
// itself at cw .. cw + W - 1, the borders pixel by pixel. Samples of In are read from the row
// itself by the tiles all of whose samples lie inside it: only the tiles at the ends read the copy,
// and only what those read is copied.
template <class K, class Sample, class In, class T>
__attribute__((always_inline)) inline void RowPass(const In* row, const RowsView& v,
                                                   const SeparableShape& s, std::int64_t cw,
                                                   const T* row_taps, std::int64_t tiles,
                                                   Sample* padded, T* tmp_row) {
  const std::int64_t front = cw * v.stride;          // padded[front + e] is row[e]
  const std::int64_t reach = (s.kw - 1) * v.stride;  // a tile reads kTile + reach samples
  // Tiles [direct_begin, direct_end) read from the row: their samples start at or after its first
  // element and end at or before its last.
  std::int64_t direct_begin = 0, direct_end = 0;
  if constexpr (std::is_same<Sample, In>::value) {
    direct_begin = (front + K::kTile - 1) / K::kTile;
    direct_end = std::max(direct_begin, (v.elements + front - reach) / K::kTile);
  }
  // The row's elements the other tiles read: [0, head) and [tail, elements).
  const std::int64_t head = std::min(v.elements, direct_begin * K::kTile + reach - front);
  const std::int64_t tail =
      direct_end > direct_begin ? std::max(head, direct_end * K::kTile - front) : head;
  if constexpr (std::is_same<Sample, In>::value) {
    const std::int64_t copied = direct_end > direct_begin ? head : v.elements;
    std::memcpy(padded + front, row, static_cast<std::size_t>(copied) * sizeof(In));
    if (direct_end > direct_begin) {
      std::memcpy(padded + front + tail, row + tail,
                  static_cast<std::size_t>(v.elements - tail) * sizeof(In));
    }
  } else {
    K::Convert(row, v.elements, padded + front);
  }
  for (std::int64_t p = 0; p < s.kw - 1 + v.width; ++p) {
    if (p == cw) p += v.width;
    if (p >= s.kw - 1 + v.width) break;
    const std::int64_t source_px = SeparableFold<std::int64_t>(p - cw, v.width, s.border);
    for (std::int64_t c = 0; c < v.stride; ++c) {
      padded[p * v.stride + c] =
          source_px < 0 ? Sample(0) : ToCompute<Sample>(row[source_px * v.stride + c]);
    }
  }
  if (direct_end == direct_begin) {
    K::Pass(padded, v.stride, row_taps, s.kw, tiles, tmp_row);
    return;
  }
  if constexpr (std::is_same<Sample, In>::value) {  // (else no tile reads the row itself)
    K::Pass(padded, v.stride, row_taps, s.kw, direct_begin, tmp_row);
    const std::int64_t first = direct_begin * K::kTile;
    K::Pass(row + (first - front), v.stride, row_taps, s.kw, direct_end - direct_begin,
            tmp_row + first);
    const std::int64_t last = direct_end * K::kTile;
    K::Pass(padded + last, v.stride, row_taps, s.kw, tiles - direct_end, tmp_row + last);
  }
}

template <class In, class T, int kBytes, int kAccumulators>
__attribute__((always_inline)) inline void Range(const In* x, In* y, const SeparableShape& s,
                                                 const T* taps, std::int64_t begin,
                                                 std::int64_t end) {
  using K = Kernel<In, T, kBytes, kAccumulators>;
  const RowsView v = ViewOf(s);
  const std::int64_t band = BandRows(s);
  const std::int64_t bands = (v.rows + band - 1) / band;
  const std::int64_t cw = (s.kw - 1) / 2, ch = (s.kh - 1) / 2;
  const std::int64_t tiles = (v.elements + K::kTile - 1) / K::kTile;
  const std::int64_t pitch = tiles * K::kTile;  // a row of tmp, whole tiles
  const std::int64_t most_tmp_rows = std::min(band, v.rows) + s.kh - 1;
  const std::int64_t most_sources = std::min(most_tmp_rows, v.rows);
  // One input row padded or folded along W (and zeros to whole tiles), of T or of uint8 (whose
  // values are no larger); the rows of tmp of the unit's distinct source rows, then a row of zeros,
  // 64-byte aligned; for each virtual row of tmp the row it reads.
  constexpr bool kBytesIn = sizeof(In) == 1;
  const bool convert_per_tap = kBytesIn && s.kw <= kConvertPerTapMostTaps;
  std::vector<T> padded(static_cast<std::size_t>(pitch + (s.kw - 1) * v.stride), T(0));
  [[maybe_unused]] In* const padded_in = reinterpret_cast<In*>(padded.data());
  AlignedRows<T> tmp(most_sources + 1, pitch);
  std::vector<const T*> tmp_rows(static_cast<std::size_t>(most_tmp_rows));
  std::vector<std::int64_t> slot_of(static_cast<std::size_t>(v.rows), -1);
  std::vector<std::int64_t> sources;
  const T* const zero_row = tmp.Row(most_sources);
  for (std::int64_t unit = begin; unit < end; ++unit) {
    const std::int64_t plane = unit / bands;
    const std::int64_t y0 = unit % bands * band, y1 = std::min(v.rows, y0 + band);
    const std::int64_t image = plane / v.planes_per_image;
    const T* row_taps = taps + (s.per_image_taps ? image * (s.kw + s.kh) : 0);
    const T* col_taps = row_taps + s.kw;
    const In* x_plane = x + plane * v.rows * v.elements;
    In* y_plane = y + plane * v.rows * v.elements;
    // Virtual rows y0 - ch .. y1 - 1 + kh - 1 - ch of tmp, each the row of tmp of its source row
    // (a slot per distinct source row, in the order the virtual rows reach them) or zeros.
    const std::int64_t virtual_rows = y1 - y0 + s.kh - 1;
    sources.clear();
    for (std::int64_t t = 0; t < virtual_rows; ++t) {
      const std::int64_t source = SeparableFold<std::int64_t>(y0 - ch + t, v.rows, s.border);
      if (source < 0) {
        tmp_rows[t] = zero_row;
        continue;
      }
      if (slot_of[source] < 0) {
        slot_of[source] = static_cast<std::int64_t>(sources.size());
        sources.push_back(source);
      }
      tmp_rows[t] = tmp.Row(slot_of[source]);
    }
    for (std::size_t slot = 0; slot < sources.size(); ++slot) {
      slot_of[sources[slot]] = -1;  // free for the next unit
      const In* row = x_plane + sources[slot] * v.elements;
      T* const tmp_row = tmp.Row(static_cast<std::int64_t>(slot));
      if constexpr (kBytesIn) {
        if (convert_per_tap) {
          RowPass<K>(row, v, s, cw, row_taps, tiles, padded_in, tmp_row);
          continue;
        }
      }
      RowPass<K>(row, v, s, cw, row_taps, tiles, padded.data(), tmp_row);
    }
    // Output rows kGroupRows at a time, then the last ones (and those of short filters) one at a
    // time.
    std::int64_t yy = y0;
    if (s.kh >= K::kGroupRows - 1) {
      for (; yy + K::kGroupRows <= y1; yy += K::kGroupRows) {
        K::template ColumnPass<K::kGroupRows>(tmp_rows.data() + (yy - y0), col_taps, s.kh,
                                              v.elements, y_plane + yy * v.elements, v.elements);
      }
    }
    for (; yy < y1; ++yy) {
      K::template ColumnPass<1>(tmp_rows.data() + (yy - y0), col_taps, s.kh, v.elements,
                                y_plane + yy * v.elements, v.elements);
    }
  }
}

template <class In, class T>
__attribute__((flatten)) void Portable(const In* x, In* y, const SeparableShape& s, const T* taps,
                                       std::int64_t begin, std::int64_t end) {
  Range<In, T, 16, 4>(x, y, s, taps, begin, end);
}

#if CONSTMEM_CPU_X86
template <class In, class T>
CONSTMEM_TARGET_AVX2
    __attribute__((flatten)) void Avx2(const In* x, In* y, const SeparableShape& s, const T* taps,
                                       std::int64_t begin, std::int64_t end) {
  Range<In, T, 32, 8>(x, y, s, taps, begin, end);
}

template <class In, class T>
CONSTMEM_TARGET_AVX512 __attribute__((flatten)) void Avx512(const In* x, In* y,
                                                            const SeparableShape& s, const T* taps,
                                                            std::int64_t begin, std::int64_t end) {
  Range<In, T, 64, 8>(x, y, s, taps, begin, end);
}
#endif

}  // namespace

std::int64_t SeparableFilterCpuUnits(const SeparableShape& s) {
  const RowsView v = ViewOf(s);
  if (v.planes == 0 || v.rows == 0 || v.elements == 0) return 0;
  const std::int64_t band = BandRows(s);
  return v.planes * ((v.rows + band - 1) / band);
}

std::int64_t SeparableFilterCpuUnitCost(const SeparableShape& s) {
  const RowsView v = ViewOf(s);
  const std::int64_t rows = std::min(BandRows(s), v.rows);
  const std::int64_t tmp_rows = std::min(rows + s.kh - 1, v.rows);
  // In double: long filters of large images pass 2^63.
  const double cost = static_cast<double>(tmp_rows) * v.elements * (s.kw + 1) +
                      static_cast<double>(rows) * v.elements * (s.kh + 1);
  constexpr double kMost = static_cast<double>(std::int64_t{1} << 62);
  return static_cast<std::int64_t>(std::min(cost, kMost));
}

template <class In, class T>
void SeparableFilterCpuRange(const In* x, In* y, const SeparableShape& shape, const T* taps,
                             std::int64_t begin, std::int64_t end, cpu::Isa isa) {
  static_assert(std::is_same<T, ComputeTypeOf<In>>::value, "taps of the compute type");
  end = std::min(end, SeparableFilterCpuUnits(shape));
  if (begin >= end) return;
  switch (isa) {
#if CONSTMEM_CPU_X86
    case cpu::Isa::kAvx512:
      return Avx512(x, y, shape, taps, begin, end);
    case cpu::Isa::kAvx2:
      return Avx2(x, y, shape, taps, begin, end);
#endif
    default:
      return Portable(x, y, shape, taps, begin, end);
  }
}

template void SeparableFilterCpuRange<float, float>(const float*, float*, const SeparableShape&,
                                                    const float*, std::int64_t, std::int64_t,
                                                    cpu::Isa);
template void SeparableFilterCpuRange<double, double>(const double*, double*, const SeparableShape&,
                                                      const double*, std::int64_t, std::int64_t,
                                                      cpu::Isa);
template void SeparableFilterCpuRange<Float16, float>(const Float16*, Float16*,
                                                      const SeparableShape&, const float*,
                                                      std::int64_t, std::int64_t, cpu::Isa);
template void SeparableFilterCpuRange<BFloat16, float>(const BFloat16*, BFloat16*,
                                                       const SeparableShape&, const float*,
                                                       std::int64_t, std::int64_t, cpu::Isa);
template void SeparableFilterCpuRange<std::uint8_t, float>(const std::uint8_t*, std::uint8_t*,
                                                           const SeparableShape&, const float*,
                                                           std::int64_t, std::int64_t, cpu::Isa);

}  // namespace ops
}  // namespace constmem

// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's CPU kernel (see separable_filter_cpu.h). Both layouts are rows of contiguous
// elements: W pixels of one channel (planes) or W pixels of C interleaved channels (channels-last),
// a tap along W then being C elements further on. A unit (a band of rows of one plane or image)
// computes the rows of tmp its outputs need, from a zero-padded or folded copy of each input row,
// into a buffer, then its outputs from that buffer. A row of tmp outside the image is tmp of the
// row it folds to (or zeros), so each distinct input row is filtered once per unit however far the
// column taps reach: a filter much taller than the image costs no more rows of tmp than the image
// has. Each pass keeps a tile of consecutive elements
// in vector registers while the taps stream past: every tap is broadcast once and applied to every
// accumulator, so each element still gets its FMAs one by one in tap order.
#include "separable_filter/separable_filter_cpu.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
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

template <class T, int kBytes, int kAccumulators>
struct Kernel {
  using V = typename cpu::Vector<T, kBytes>::type;
  static constexpr int kLanes = cpu::Vector<T, kBytes>::kLanes;
  static constexpr std::int64_t kTile = std::int64_t{kLanes} * kAccumulators;

  // out[0, tiles * kTile): out[e] = sum_j fma(in[e + j * step], taps[j], .) from +0: the row pass,
  // stepping a pixel along W (1 or C elements).
  __attribute__((always_inline)) static inline void Pass(const T* in, std::int64_t step,
                                                         const T* taps, std::int64_t count,
                                                         std::int64_t tiles, T* out) {
    for (std::int64_t t = 0; t < tiles; ++t) {
      V acc[kAccumulators] = {};
      const T* at = in + t * kTile;
      for (std::int64_t j = 0; j < count; ++j) {
        V tap;
        cpu::Broadcast(tap, taps + j);
#pragma GCC unroll 16
        for (int a = 0; a < kAccumulators; ++a) {
          V sample;
          std::memcpy(&sample, at + j * step + a * kLanes, kBytes);
          cpu::Fma(acc[a], sample, tap, acc[a]);
        }
      }
#pragma GCC unroll 16
      for (int a = 0; a < kAccumulators; ++a)
        std::memcpy(out + t * kTile + a * kLanes, &acc[a], kBytes);
    }
  }

  // The column pass: out[e] = sum_j fma(rows[j][offset + e], taps[j], .) from +0, rows[j] the row
  // of tmp tap j reads.
  __attribute__((always_inline)) static inline void ColumnPass(const T* const* rows,
                                                               std::int64_t offset, const T* taps,
                                                               std::int64_t count,
                                                               std::int64_t tiles, T* out) {
    for (std::int64_t t = 0; t < tiles; ++t) {
      V acc[kAccumulators] = {};
      const std::int64_t at = offset + t * kTile;
      for (std::int64_t j = 0; j < count; ++j) {
        V tap;
        cpu::Broadcast(tap, taps + j);
        const T* row = rows[j] + at;
#pragma GCC unroll 16
        for (int a = 0; a < kAccumulators; ++a) {
          V sample;
          std::memcpy(&sample, row + a * kLanes, kBytes);
          cpu::Fma(acc[a], sample, tap, acc[a]);
        }
      }
#pragma GCC unroll 16
      for (int a = 0; a < kAccumulators; ++a)
        std::memcpy(out + t * kTile + a * kLanes, &acc[a], kBytes);
    }
  }
};

template <class In, class T, int kBytes, int kAccumulators>
__attribute__((always_inline)) inline void Range(const In* x, In* y, const SeparableShape& s,
                                                 const T* taps, std::int64_t begin,
                                                 std::int64_t end) {
  using K = Kernel<T, kBytes, kAccumulators>;
  const RowsView v = ViewOf(s);
  const std::int64_t band = BandRows(s);
  const std::int64_t bands = (v.rows + band - 1) / band;
  const std::int64_t tiles = (v.elements + K::kTile - 1) / K::kTile;
  const std::int64_t pitch = tiles * K::kTile;  // a row of tmp, whole tiles
  const std::int64_t cw = (s.kw - 1) / 2, ch = (s.kh - 1) / 2;
  // One input row padded or folded along W (and zeros to whole tiles); the rows of tmp of the
  // band's distinct source rows, then a row of zeros; for each virtual row of tmp the row it reads;
  // one row of outputs before conversion.
  std::vector<T> padded(static_cast<std::size_t>(pitch + (s.kw - 1) * v.stride), T(0));
  const std::int64_t most_tmp_rows = std::min(band, v.rows) + s.kh - 1;
  const std::int64_t most_sources = std::min(most_tmp_rows, v.rows);
  std::vector<T> tmp(static_cast<std::size_t>((most_sources + 1) * pitch));
  std::vector<const T*> tmp_rows(static_cast<std::size_t>(most_tmp_rows));
  std::vector<std::int64_t> slot_of(static_cast<std::size_t>(v.rows), -1);
  std::vector<std::int64_t> sources;
  std::vector<T> out_row(static_cast<std::size_t>(pitch));
  T* const zero_row = tmp.data() + most_sources * pitch;
  std::fill(zero_row, zero_row + pitch, T(0));
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
      tmp_rows[t] = tmp.data() + slot_of[source] * pitch;
    }
    for (std::size_t slot = 0; slot < sources.size(); ++slot) {
      const std::int64_t source = sources[slot];
      slot_of[source] = -1;  // free for the next unit
      T* tmp_row = tmp.data() + static_cast<std::int64_t>(slot) * pitch;
      const In* row = x_plane + source * v.elements;
      // Padded pixel p is source pixel p - cw: the row itself at cw .. cw + W - 1, converted in
      // one pass; the borders pixel by pixel.
      if constexpr (std::is_same<In, T>::value) {
        std::memcpy(padded.data() + cw * v.stride, row,
                    static_cast<std::size_t>(v.elements) * sizeof(T));
      } else {
        T* to = padded.data() + cw * v.stride;
        for (std::int64_t e = 0; e < v.elements; ++e) to[e] = static_cast<T>(row[e]);
      }
      for (std::int64_t p = 0; p < s.kw - 1 + v.width; ++p) {
        if (p == cw) p += v.width;
        if (p >= s.kw - 1 + v.width) break;
        const std::int64_t source_px = SeparableFold<std::int64_t>(p - cw, v.width, s.border);
        for (std::int64_t c = 0; c < v.stride; ++c) {
          padded[p * v.stride + c] =
              source_px < 0 ? T(0) : static_cast<T>(row[source_px * v.stride + c]);
        }
      }
      K::Pass(padded.data(), v.stride, row_taps, s.kw, tiles, tmp_row);
    }
    for (std::int64_t yy = y0; yy < y1; ++yy) {
      const T* const* rows = tmp_rows.data() + (yy - y0);
      In* out = y_plane + yy * v.elements;
      if constexpr (std::is_same<In, T>::value) {
        const std::int64_t whole = v.elements / K::kTile;
        K::ColumnPass(rows, 0, col_taps, s.kh, whole, out);
        if (whole < tiles) {
          K::ColumnPass(rows, whole * K::kTile, col_taps, s.kh, 1, out_row.data());
          std::memcpy(out + whole * K::kTile, out_row.data(),
                      static_cast<std::size_t>(v.elements - whole * K::kTile) * sizeof(T));
        }
      } else {
        K::ColumnPass(rows, 0, col_taps, s.kh, tiles, out_row.data());
        for (std::int64_t e = 0; e < v.elements; ++e) out[e] = SeparableToOutput<In>(out_row[e]);
      }
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
  static_assert(std::is_same<T, typename SeparableCompute<In>::type>::value,
                "taps of the compute type");
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
template void SeparableFilterCpuRange<std::uint8_t, float>(const std::uint8_t*, std::uint8_t*,
                                                           const SeparableShape&, const float*,
                                                           std::int64_t, std::int64_t, cpu::Isa);

}  // namespace ops
}  // namespace constmem

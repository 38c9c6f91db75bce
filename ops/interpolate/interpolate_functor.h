// SPDX-License-Identifier: Apache-2.0
// Interpolate's arithmetic, the same on the CPU and the GPU: piecewise-linear interpolation into
// `knots` (n values at n equally spaced points over [lo, hi]), clamped at the ends, as
// np.interp(x, np.linspace(lo, hi, n), knots):
//
//   t = (x - lo) * scale            scale = (n - 1) / (hi - lo), rounded to T once
//   y = knots[0]                    t <= 0
//   y = knots[n-1]                  t >= n - 1
//   y = fma(f, knots[i+1] - knots[i], knots[i])     i = floor(t), f = t - i
//
// NaN stays NaN. float16 and bfloat16 data is computed in float32 (InterpolateData), the grid and
// the knots float32's. Plain C++ (CONSTMEM_HOST_DEVICE under nvcc): no framework and no CUDA
// include.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "constmem/host_device.hpp"
#include "constmem/numeric.hpp"
#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/table.hpp"

#pragma GCC visibility push(hidden)
namespace constmem {
namespace ops {

constexpr std::int64_t kInterpolateMinKnots = 2;
// Every op's limit. Up to 64 KiB of knots a block stages them into shared memory; beyond, lanes
// read them from global memory (float32 knots: past the first 64 KiB, which blocks still stage).
constexpr std::int64_t kInterpolateMaxKnots = kMaxTableEntries;
constexpr std::int64_t kInterpolateMaxElements = std::int64_t{1} << 62;

#pragma GCC visibility pop  // a value type bindings keep in their own classes (visibility.hpp)
// Where the knots lie, in the data's type.
template <class T>
struct InterpolateGrid {
  T lo;
  T scale;
  int last;  // knots - 1
};
#pragma GCC visibility push(hidden)

inline Status CheckInterpolateKnots(std::int64_t knots) {
  if (knots < kInterpolateMinKnots || knots > kInterpolateMaxKnots) {
    return InvalidArgument("knots must have " + std::to_string(kInterpolateMinKnots) + " to " +
                           std::to_string(kInterpolateMaxKnots) + " entries; got " +
                           std::to_string(knots));
  }
  return Status::Ok();
}

// The grid of `knots` points over [lo, hi], both rounded to T: finite, lo < hi, and a finite
// spacing.
template <class T>
Status MakeInterpolateGrid(double lo, double hi, std::int64_t knots, InterpolateGrid<T>* grid) {
  CONSTMEM_RETURN_IF_ERROR(CheckInterpolateKnots(knots));
  const T low = RoundFromFloat64<T>(lo);
  const T high = RoundFromFloat64<T>(hi);
  const T scale = static_cast<T>(knots - 1) / (high - low);
  if (!std::isfinite(low) || !std::isfinite(high) || !(low < high) || !std::isfinite(scale) ||
      !(scale > 0)) {
    return InvalidArgument(
        "the range [lo, hi] must be finite with lo < hi in the data's dtype; got [" +
        std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *grid = {low, scale, static_cast<int>(knots - 1)};
  return Status::Ok();
}

template <class T, class Table>
CONSTMEM_HOST_DEVICE T InterpolateElement(T x, const Table& knots, const InterpolateGrid<T>& grid) {
  const T t = (x - grid.lo) * grid.scale;
  if (t >= static_cast<T>(grid.last)) return knots[grid.last];
  if (t <= T(0)) return knots[0];
  if (t != t) return t;  // NaN
  const int i = static_cast<int>(t);
  const T below = knots[i];
  return Fma(t - static_cast<T>(i), static_cast<T>(knots[i + 1]) - below, below);
}

// An element of data In computed in T (ComputeTypeOf<In>): float16 and bfloat16 read as float,
// the result rounded to nearest even. For In = T both conversions are no-ops.
template <class In, class T, class Table>
CONSTMEM_HOST_DEVICE In InterpolateData(In x, const Table& knots, const InterpolateGrid<T>& grid) {
  return FromCompute<In>(InterpolateElement(ToCompute<T>(x), knots, grid));
}

}  // namespace ops
}  // namespace constmem
#pragma GCC visibility pop

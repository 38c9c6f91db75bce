// SPDX-License-Identifier: Apache-2.0
// Upfirdn's arithmetic, shared by the CPU kernel, the GPU kernel's tests and the benchmarks.
// Plain C++: no framework and no CUDA include.
//
// scipy.signal.upfirdn(h, x, up, down) along the last axis of [rows, n]: upsample by inserting
// up - 1 zeros after each sample, convolve with the k taps h (y_full[t] = sum_j h[j] xup[t - j]),
// keep every down-th sample from the first. Computed polyphase: output i sits at t = i * down of
// the upsampled signal, whose phase p = t mod up picks the taps h[p], h[p + up], ... and whose base
// b = t div up the last input sample they meet:
//
//   y[i] = +0;  for m = 0, 1, ... :  y[i] = fma(x[b - m], h[p + m * up], y[i])
//
// over the m with 0 <= p + m * up < k and 0 <= b - m < n, in ascending order, one rounding each.
// Finite values, zeros and infinities give the same bits everywhere; a NaN gives a NaN whose
// payload is not kept (which of two NaN operands an fma returns depends on the instruction form the
// compiler picks).
// Terms outside the row or past the last tap are skipped, not multiplied by zero (an infinite tap
// or sample next to the edge stays out of the outputs that do not meet it). The CPU and GPU
// kernels run exactly these operations in this order, so they agree bit for bit.
//
// Outputs i and i + P, P = up / gcd(up, down), share a phase; their bases are Q = down / gcd(up,
// down) samples apart. Output c + s * P (c < P) has phase (c * down) mod up and base
// (c * down) div up + s * Q.
#pragma once

#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>

#include "constmem/status.hpp"
#include "constmem/strategy.hpp"

namespace constmem {
namespace ops {

// The most taps Upfirdn takes: the core's limit for every table, 2^20 (kMaxTableEntries). Tables
// up to 4,096 taps fit its constant banks (upfirdn_gpu.cu); longer ones are read from global
// memory, staged in shared memory where they fit. scipy.signal.resample_poly's default filter
// (20 * max(up, down) + 1 taps) fits up to rates of about 50,000 after their gcd.
constexpr std::int64_t kUpfirdnMaxTaps = kMaxTableEntries;
// up and down: 1 to 2^31 - 1 each. The GPU's tiled kernel takes the shapes whose tile fits shared
// memory (a long filter's halo in chunks) and whose indices fit int, a direct kernel the others
// (upfirdn_gpu.cu); products such as
// i * down and p + m * up are int64 (below 2^63 within the limits).
constexpr std::int64_t kUpfirdnMaxRate = (std::int64_t{1} << 31) - 1;
constexpr std::int64_t kUpfirdnMaxElements = std::int64_t{1} << 62;

struct UpfirdnShape {
  std::int64_t rows = 0;     // product of the leading dimensions
  std::int64_t length = 0;   // n, samples per row
  std::int64_t outputs = 0;  // outputs per row (UpfirdnOutputLength)
  std::int64_t taps = 0;     // k
  std::int64_t up = 1;
  std::int64_t down = 1;
};

// scipy's _output_len: ceil(((n - 1) * up + k) / down) as (((n - 1) * up + k) - 1) // down + 1,
// with Python's floor division. Negative only for n = 0 and k < up - down + 1, where scipy raises
// ("negative dimensions are not allowed"); for n = 0 otherwise it gives that many zeros. Arguments
// within the limits (n <= 2^62 / up, k <= 2^20, up < 2^31) do not overflow.
inline std::int64_t UpfirdnOutputLength(std::int64_t length, std::int64_t taps, std::int64_t up,
                                        std::int64_t down) {
  const std::int64_t numerator = (length - 1) * up + taps - 1;
  const std::int64_t floor = numerator >= 0 ? numerator / down : -((-numerator + down - 1) / down);
  return floor + 1;
}

// The shape of upfirdn(h, x, up, down) for x of [rows, length] and `taps` taps, checked against
// the limits: InvalidArgument for taps outside [1, kUpfirdnMaxTaps], up or down outside [1,
// kUpfirdnMaxRate], negative sizes, more than kUpfirdnMaxElements elements in or out, and a
// negative output length (empty rows with fewer taps than up - down + 1, where scipy raises).
inline Status MakeUpfirdnShape(std::int64_t rows, std::int64_t length, std::int64_t taps,
                               std::int64_t up, std::int64_t down, UpfirdnShape* shape) {
  if (taps < 1 || taps > kUpfirdnMaxTaps) {
    return InvalidArgument("Upfirdn needs 1 to " + std::to_string(kUpfirdnMaxTaps) + " taps; got " +
                           std::to_string(taps));
  }
  if (up < 1 || up > kUpfirdnMaxRate || down < 1 || down > kUpfirdnMaxRate) {
    return InvalidArgument("Upfirdn: up and down must be 1 to " + std::to_string(kUpfirdnMaxRate) +
                           "; got " + std::to_string(up) + " and " + std::to_string(down));
  }
  if (rows < 0 || length < 0 || length > kUpfirdnMaxElements / up ||
      (rows > 0 && length > kUpfirdnMaxElements / rows)) {
    return InvalidArgument("Upfirdn: invalid shape [" + std::to_string(rows) + ", " +
                           std::to_string(length) + "]");
  }
  const std::int64_t outputs = UpfirdnOutputLength(length, taps, up, down);
  if (outputs < 0) {
    return InvalidArgument("Upfirdn: rows of 0 samples with " + std::to_string(taps) +
                           " taps, up " + std::to_string(up) + " and down " + std::to_string(down) +
                           " have a negative output length (scipy raises)");
  }
  if (rows > 0 && outputs > kUpfirdnMaxElements / rows) {
    return InvalidArgument("Upfirdn: more than 2^62 outputs");
  }
  shape->rows = rows;
  shape->length = length;
  shape->outputs = outputs;
  shape->taps = taps;
  shape->up = up;
  shape->down = down;
  return Status::Ok();
}

// Whether `shape` is one MakeUpfirdnShape makes (the launchers check what they are given).
inline bool ValidUpfirdnShape(const UpfirdnShape& shape) {
  UpfirdnShape made;
  return MakeUpfirdnShape(shape.rows, shape.length, shape.taps, shape.up, shape.down, &made).ok() &&
         made.outputs == shape.outputs;
}

// Output i of one row, in the order stated above.
template <class T>
inline T UpfirdnOutput(const T* row, const UpfirdnShape& shape, const T* taps, std::int64_t i) {
  const std::int64_t t = i * shape.down;
  const std::int64_t p = t % shape.up;
  const std::int64_t b = t / shape.up;
  if (p >= shape.taps) return T(0);
  const std::int64_t last_m = (shape.taps - 1 - p) / shape.up;  // the last tap of this phase
  const std::int64_t lo = b - shape.length + 1 > 0 ? b - shape.length + 1 : 0;
  const std::int64_t hi = b < last_m ? b : last_m;
  T y = T(0);
  for (std::int64_t m = lo; m <= hi; ++m) y = std::fma(row[b - m], taps[p + m * shape.up], y);
  return y;
}

// The polyphase structure: P and Q as above.
struct UpfirdnPhases {
  std::int64_t period;  // P = up / gcd: outputs i and i + P share a phase
  std::int64_t stride;  // Q = down / gcd: and their bases are this many samples apart
};
inline UpfirdnPhases MakeUpfirdnPhases(std::int64_t up, std::int64_t down) {
  const std::int64_t g = std::gcd(up, down);
  return {up / g, down / g};
}

}  // namespace ops
}  // namespace constmem

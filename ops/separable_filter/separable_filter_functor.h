// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's arithmetic, shared by the CPU kernel, the GPU kernel, the tests and the
// benchmarks. Plain C++ (CONSTMEM_HOST_DEVICE where the GPU kernel uses it): no framework include.
//
// A separable 2-D filter over images, the output the size of the input:
//
//   images     planes [P, H, W] (PyTorch's NCHW flattened: P = B * C, the spatial axes last), or
//              channels-last [B, H, W, C] (TensorFlow's and Keras's NHWC). Image b owns planes
//              b*C .. b*C + C-1 in the planes layout. Empty images (any size 0), H or W of 1 and
//              kernels larger than the image are all valid.
//   taps       as the kernels read them, ONE table: the kw row taps (along W) followed by the kh
//              column taps (along H), `[kw + kh]` shared by every image, or per image
//              `[B, kw + kh]` (image b's pair at b * (kw + kh)). The op takes them as two tables,
//              row taps `[kw]` or `[B * kw]` and column taps `[kh]` or `[B * kh]`, and joins them
//              (JoinSeparableTaps).
//   centre     c = (k - 1) / 2 on each axis (TensorFlow's SAME rule, as FirFilter).
//   passes     tmp[y, x] = sum_j row[j] * in[y, x + j - cw]      (j = 0 .. kw-1)
//              out[y, x] = sum_i col[i] * tmp[y + i - ch, x]     (i = 0 .. kh-1)
//              Each sum is one fused multiply-add per tap, in tap order, starting from +0, in the
//              compute type: acc = fma(sample, tap, acc). tmp is rounded to the compute type. A
//              sample outside the image is the border's (below); a zero sample still takes its
//              FMA. The CPU and the GPU perform the same FMAs in the same order, so they agree
//              bit for bit.
//   borders    kZeros: samples outside the image are 0 (and rows of tmp outside the image are 0,
//                not the filter of a zero row);
//              kReflect: reflect-101 (torch's `reflect`, OpenCV's BORDER_REFLECT_101:
//                ... 2 1 | 0 1 2 ... n-1 | n-2 ...), folded again as often as the radius needs
//                (period 2n - 2; an axis of one pixel reflects to itself);
//              kReplicate: clamped to the edge.
//              Filtering along W commutes with reflecting or replicating rows, so rows of tmp
//              outside the image are tmp of the folded row: one fused pass is exact for all three.
//   dtypes     float32 and float64: compute type = data type = tap type. float16, bfloat16 and
//              uint8 in and out: float32 taps and compute (ComputeTypeOf, ToCompute), the result
//              written by FromCompute: 16-bit floats rounded to nearest even (a float32 filter of
//              the converted images, cast back), uint8 clamped to [0, 255] (NaN to 0) and rounded
//              half to even (torch.round, what torchvision does for uint8 tensors).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "constmem/host_device.hpp"
#include "constmem/numeric.hpp"
#include "constmem/status.hpp"
#include "constmem/strategy.hpp"

namespace constmem {
namespace ops {

// The most taps along either axis, and the most entries of each of the op's two tables, shared or
// per image (B * kw, B * kh): the table limit of every constmem op (2^20).
constexpr std::int64_t kSeparableMaxTaps = kMaxTableEntries;
constexpr std::int64_t kSeparableMaxTableEntries = kMaxTableEntries;
// The longest filters, along each axis, the GPU's fused kernel runs in its small tile (which fits
// GPUs with 64 KiB of shared memory a block, compute capability 7.5: kh + 15 rows of float64
// intermediate within 64 KiB at 127 taps). Longer filters run in its large tile where that fits
// the GPU's shared memory, else in two passes through an intermediate in global memory, each a
// tiled 1-D filter over chunks of taps, with the same results (separable_filter_gpu.cu).
constexpr std::int64_t kSeparableSmallTileMaxTaps = 127;
constexpr std::int64_t kSeparableMaxElements = std::int64_t{1} << 62;

enum class SeparableLayout { kPlanes, kChannelsLast };
enum class SeparableBorder { kZeros, kReflect, kReplicate };

struct SeparableShape {
  std::int64_t images = 0;    // B
  std::int64_t channels = 1;  // C
  std::int64_t height = 0;    // H
  std::int64_t width = 0;     // W
  SeparableLayout layout = SeparableLayout::kPlanes;
  std::int64_t kh = 1;  // column taps, along H
  std::int64_t kw = 1;  // row taps, along W
  bool per_image_taps = false;
  SeparableBorder border = SeparableBorder::kReflect;

  std::int64_t Elements() const { return images * channels * height * width; }
  // Entries of the row and column tables this shape takes, and of the two joined.
  std::int64_t RowTableSize() const { return (per_image_taps ? images : 1) * kw; }
  std::int64_t ColumnTableSize() const { return (per_image_taps ? images : 1) * kh; }
  std::int64_t TableSize() const { return RowTableSize() + ColumnTableSize(); }
};

// What every entry point checks: sizes in range and a joined table of shape.TableSize() entries.
inline Status CheckSeparableArguments(const SeparableShape& s, std::int64_t table_size) {
  if (s.images < 0 || s.channels < 0 || s.height < 0 || s.width < 0) {
    return InvalidArgument("SeparableFilter: negative image size");
  }
  if (s.kw < 1 || s.kw > kSeparableMaxTaps || s.kh < 1 || s.kh > kSeparableMaxTaps) {
    return InvalidArgument("SeparableFilter takes 1 to " + std::to_string(kSeparableMaxTaps) +
                           " taps along each axis; got kh = " + std::to_string(s.kh) +
                           ", kw = " + std::to_string(s.kw));
  }
  const std::int64_t limit = kSeparableMaxElements;
  std::int64_t elements = 1;
  for (std::int64_t d : {s.images, s.channels, s.height, s.width}) {
    if (d != 0 && elements > limit / d)
      return InvalidArgument("SeparableFilter: too many elements");
    elements *= d;
  }
  if ((s.per_image_taps && s.images > kSeparableMaxTableEntries) ||
      s.RowTableSize() > kSeparableMaxTableEntries ||
      s.ColumnTableSize() > kSeparableMaxTableEntries) {
    return InvalidArgument("SeparableFilter takes at most " +
                           std::to_string(kSeparableMaxTableEntries) + " entries a table");
  }
  if (table_size != s.TableSize()) {
    return InvalidArgument("SeparableFilter needs a table of " + std::to_string(s.TableSize()) +
                           " entries (" + (s.per_image_taps ? "B * " : "") + "(kw + kh)); got " +
                           std::to_string(table_size));
  }
  return Status::Ok();
}

// The op's two tables, the row taps ([kw] or [B * kw]) and the column taps ([kh] or [B * kh]), as
// the kernels read them: one table, each image's row taps then its column taps (shape.TableSize()
// entries into `joined`).
template <class T>
void JoinSeparableTaps(const SeparableShape& s, const T* row, const T* column, T* joined) {
  const std::int64_t blocks = s.per_image_taps ? s.images : 1;
  for (std::int64_t b = 0; b < blocks; ++b) {
    T* const pair = joined + b * (s.kw + s.kh);
    for (std::int64_t j = 0; j < s.kw; ++j) pair[j] = row[b * s.kw + j];
    for (std::int64_t i = 0; i < s.kh; ++i) pair[s.kw + i] = column[b * s.kh + i];
  }
}
template <class T>
std::vector<T> JoinSeparableTaps(const SeparableShape& s, const T* row, const T* column) {
  std::vector<T> joined(static_cast<std::size_t>(s.TableSize()));
  JoinSeparableTaps(s, row, column, joined.data());
  return joined;
}

// The source index along an axis of n pixels for virtual index i, or -1 for a zero sample.
template <class I>
CONSTMEM_HOST_DEVICE I SeparableFold(I i, I n, SeparableBorder border) {
  if (i >= 0 && i < n) return i;
  if (border == SeparableBorder::kZeros) return -1;
  if (border == SeparableBorder::kReplicate) return i < 0 ? 0 : n - 1;
  if (n == 1) return 0;
  const I period = 2 * (n - 1);
  I m = i % period;
  if (m < 0) m += period;
  return m < n ? m : period - m;
}

// Element offset of pixel (yy, xx) of channel c of image b.
inline std::int64_t SeparableOffset(const SeparableShape& s, std::int64_t b, std::int64_t c,
                                    std::int64_t yy, std::int64_t xx) {
  if (s.layout == SeparableLayout::kPlanes)
    return ((b * s.channels + c) * s.height + yy) * s.width + xx;
  return ((b * s.height + yy) * s.width + xx) * s.channels + c;
}

// tmp at (b, c, row yy, column xx) for an in-image row yy: the definition, one output at a time.
template <class In, class T>
T SeparableRowPass(const In* x, const SeparableShape& s, const T* row_taps, std::int64_t b,
                   std::int64_t c, std::int64_t yy, std::int64_t xx) {
  const std::int64_t cw = (s.kw - 1) / 2;
  T acc = T(0);
  for (std::int64_t j = 0; j < s.kw; ++j) {
    const std::int64_t source = SeparableFold<std::int64_t>(xx + j - cw, s.width, s.border);
    const T sample = source < 0 ? T(0) : ToCompute<T>(x[SeparableOffset(s, b, c, yy, source)]);
    acc = Fma(sample, row_taps[j], acc);
  }
  return acc;
}

// The output at (b, c, yy, xx), straight from the definition (O(kw * kh): for tests).
template <class In, class T>
In SeparableOutput(const In* x, const SeparableShape& s, const T* taps, std::int64_t b,
                   std::int64_t c, std::int64_t yy, std::int64_t xx) {
  const T* row_taps = taps + (s.per_image_taps ? b * (s.kw + s.kh) : 0);
  const T* col_taps = row_taps + s.kw;
  const std::int64_t ch = (s.kh - 1) / 2;
  T acc = T(0);
  for (std::int64_t i = 0; i < s.kh; ++i) {
    const std::int64_t row = SeparableFold<std::int64_t>(yy + i - ch, s.height, s.border);
    const T t = row < 0 ? T(0) : SeparableRowPass(x, s, row_taps, b, c, row, xx);
    acc = Fma(t, col_taps[i], acc);
  }
  return FromCompute<In>(acc);
}

}  // namespace ops
}  // namespace constmem

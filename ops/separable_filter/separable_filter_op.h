// SPDX-License-Identifier: Apache-2.0
// SeparableFilter as every framework binds it (constmem/op_description.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "constmem/op_description.hpp"
#include "separable_filter/separable_filter_cpu.h"
#include "separable_filter/separable_filter_functor.h"
#include "separable_filter/separable_filter_launcher.h"

namespace constmem {
namespace ops {

struct SeparableFilterOp : OpDescription {
  static constexpr OpNames kNames{"constmem", "SeparableFilter", "separable_filter", "images",
                                  "taps"};
  static constexpr TableRule kTable{2, kSeparableMaxTableEntries};
  static constexpr std::int64_t kMaxElements = kSeparableMaxElements;
  static constexpr bool kElementwise = false;  // and x and y must not overlap
  static constexpr bool kUint8 = true;
  static constexpr AttrSpec kAttrs[] = {
      {"row_taps", AttrKind::kInt64},
      {"column_taps", AttrKind::kInt64},
      {"border", AttrKind::kChoice, "reflect,zeros,replicate"},
      {"layout", AttrKind::kChoice, "channels_first,channels_last"},
  };
  static constexpr int kAttrCount = 4;
  static constexpr const char* kDoc = R"doc(
A separable 2-D filter, the output the size of the input: each image is correlated along its
width with the kw row taps, then along its height with the kh column taps, one fused
multiply-add per tap in tap order (the CPU and the GPU agree bit for bit), the centre of k taps at
(k - 1) // 2.
images: channels_first [..., C, H, W] (every axis before C an image axis; rank 2 is one plane) or
  channels_last [..., H, W, C] (every axis before H an image axis); float32, float64, or uint8
  (computed in float32, rounded half to even and clamped to [0, 255]).
taps: the kw row taps then the kh column taps, shared ([kw + kh]) or per image ([B * (kw + kh)],
  B > 1 the number of images, image b's at b * (kw + kh)), at most 1048576 (2^20) entries; float32
  for float32 and uint8 images, float64 for float64 images.
row_taps: kw, 1 to 1048576 (2^20).
column_taps: kh, 1 to 1048576; 0 (default): kh = the table's size - kw, a shared table.
border: reflect (reflect-101, as torch's and OpenCV's default), zeros or replicate.
layout: channels_first or channels_last.
)doc";

  struct Params {
    std::int64_t row_taps = 1;
    std::int64_t column_taps = 0;
    SeparableBorder border = SeparableBorder::kReflect;
    SeparableLayout layout = SeparableLayout::kPlanes;
    Status Read(const AttrValue* values, DataType) {
      row_taps = values[0].int64;
      column_taps = values[1].int64;
      border = values[2].choice == "zeros"       ? SeparableBorder::kZeros
               : values[2].choice == "replicate" ? SeparableBorder::kReplicate
                                                 : SeparableBorder::kReflect;
      layout = values[3].choice == "channels_last" ? SeparableLayout::kChannelsLast
                                                   : SeparableLayout::kPlanes;
      if (row_taps < 1 || row_taps > kSeparableMaxTaps) {
        return InvalidArgument("row_taps must be 1 to " + std::to_string(kSeparableMaxTaps) +
                               "; got " + std::to_string(row_taps));
      }
      if (column_taps < 0 || column_taps > kSeparableMaxTaps) {
        return InvalidArgument("column_taps must be 0 to " + std::to_string(kSeparableMaxTaps) +
                               "; got " + std::to_string(column_taps));
      }
      return Status::Ok();
    }
  };
  using Shape = SeparableShape;

  // y has x's shape. The table is per image when column_taps > 0 and its size is B * (kw + kh)
  // for B > 1 images; shared when its size is kw + kh.
  static Status Output(const Dims& x, const Params& params, std::int64_t table_size, Shape* shape,
                       Dims* y) {
    const bool last = params.layout == SeparableLayout::kChannelsLast;
    const std::size_t rank = x.size();
    if (rank < (last ? 3u : 2u)) {
      return InvalidArgument(std::string("images must have rank ") + (last ? "3" : "2") +
                             " or more (" + (last ? "[..., H, W, C]" : "[..., H, W]") +
                             "); got rank " + std::to_string(rank));
    }
    *y = x;
    if (ElementCount(x) < 0 || table_size < 0) return Status::Ok();
    Shape s;
    s.layout = params.layout;
    s.border = params.border;
    s.kw = params.row_taps;
    const std::size_t image_axes = rank >= 3 ? rank - 3 : 0;
    s.images = ElementCount(Dims(x.begin(), x.begin() + image_axes));
    if (last) {
      s.height = x[rank - 3];
      s.width = x[rank - 2];
      s.channels = x[rank - 1];
    } else {
      s.channels = rank >= 3 ? x[rank - 3] : 1;
      s.height = x[rank - 2];
      s.width = x[rank - 1];
    }
    if (params.column_taps == 0) {
      s.kh = table_size - s.kw;
      if (s.kh < 1) {
        return InvalidArgument("taps must hold row_taps + at least one column tap; got " +
                               std::to_string(table_size) +
                               " entries for row_taps = " + std::to_string(s.kw));
      }
    } else {
      s.kh = params.column_taps;
      const std::int64_t pair = s.kw + s.kh;
      s.per_image_taps = table_size != pair && s.images > 1 && table_size == s.images * pair;
      if (table_size != pair && !s.per_image_taps) {
        return InvalidArgument("taps must have row_taps + column_taps = " + std::to_string(pair) +
                               " entries (shared) or " + std::to_string(s.images) + " * " +
                               std::to_string(pair) + " (one pair per image); got " +
                               std::to_string(table_size));
      }
    }
    CONSTMEM_RETURN_IF_ERROR(CheckSeparableArguments(s, table_size));
    *shape = s;
    return Status::Ok();
  }

  template <class In, class Shard>
  static void RunCpu(const Params&, const Shape& shape, const In* x, In* y,
                     const ComputeTypeOf<In>* taps, std::int64_t, const Shard& shard) {
    shard(SeparableFilterCpuUnits(shape), SeparableFilterCpuUnitCost(shape),
          [&](std::int64_t begin, std::int64_t end) {
            SeparableFilterCpuRange<In, ComputeTypeOf<In>>(x, y, shape, taps, begin, end);
          });
  }
  template <class In>
  static Status Launch(GpuStream stream, const Params&, const Shape& shape, const In* x, In* y,
                       const TableView<ComputeTypeOf<In>>& taps) {
    return LaunchSeparableFilter<In, ComputeTypeOf<In>>(stream, x, y, shape, taps);
  }
  template <class In>
  static Placement Place(std::int64_t count, SourceKind source) {
    return SeparableFilterPlacement<ComputeTypeOf<In>>(count, source);
  }
};

}  // namespace ops
}  // namespace constmem

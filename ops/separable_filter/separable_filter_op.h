// SPDX-License-Identifier: Apache-2.0
// SeparableFilter as every framework binds it (constmem/op_description.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "constmem/op_description.hpp"
#include "separable_filter/separable_filter_cpu.h"
#include "separable_filter/separable_filter_functor.h"
#include "separable_filter/separable_filter_launcher.h"

namespace constmem {
namespace ops {

struct SeparableFilterOp : OpDescription {
  static constexpr OpNames kNames{"constmem", "SeparableFilter", "separable_filter", "images",
                                  "row_taps"};
  static constexpr TableSpec kTables[] = {
      {"row_taps", 1, kSeparableMaxTableEntries},
      {"column_taps", 1, kSeparableMaxTableEntries},
  };
  static constexpr int kTableCount = 2;
  static constexpr std::int64_t kMaxElements = kSeparableMaxElements;
  static constexpr bool kElementwise = false;  // and x and y must not overlap
  static constexpr DataTypeSet kDataTypes{DataType::kFloat32, DataType::kFloat64,
                                          DataType::kFloat16, DataType::kBFloat16,
                                          DataType::kUint8};
  static constexpr AttrSpec kAttrs[] = {
      {"taps", AttrKind::kChoice, "shared,per_image"},
      {"border", AttrKind::kChoice, "reflect,zeros,replicate"},
      {"layout", AttrKind::kChoice, "channels_first,channels_last"},
  };
  static constexpr int kAttrCount = 3;
  static constexpr const char* kDoc = R"doc(
A separable 2-D filter, the output the size of the input: each image is correlated along its
width with the kw row taps, then along its height with the kh column taps, one fused
multiply-add per tap in tap order (the CPU and the GPU agree bit for bit), the centre of k taps at
(k - 1) // 2.
images: channels_first [..., C, H, W] (every axis before C an image axis; rank 2 is one plane) or
  channels_last [..., H, W, C] (every axis before H an image axis); float32, float64, float16 or
  bfloat16 (computed in float32, rounded to nearest even: the float32 filter of the images cast
  to float32, cast back), or uint8 (computed in float32, rounded half to even and clamped to
  [0, 255]).
row_taps: the kw taps along the width, shared ([kw]) or per image ([B * kw], image b's at b * kw);
  float64 for float64 images, float32 for the others; at most 1048576 (2^20).
column_taps: the kh taps along the height, shared ([kh]) or per image ([B * kh]), as row_taps.
taps: shared (default) or per_image (B sets of each, B the number of images).
border: reflect (reflect-101, as torch's and OpenCV's default), zeros or replicate.
layout: channels_first or channels_last.
)doc";

  struct Params {
    bool per_image = false;
    SeparableBorder border = SeparableBorder::kReflect;
    SeparableLayout layout = SeparableLayout::kPlanes;
    Status Read(const AttrValue* values, DataType) {
      per_image = values[0].choice == "per_image";
      border = values[1].choice == "zeros"       ? SeparableBorder::kZeros
               : values[1].choice == "replicate" ? SeparableBorder::kReplicate
                                                 : SeparableBorder::kReflect;
      layout = values[2].choice == "channels_last" ? SeparableLayout::kChannelsLast
                                                   : SeparableLayout::kPlanes;
      return Status::Ok();
    }
  };
  using Shape = SeparableShape;

  // y has x's shape. Shared taps: kw and kh are the tables' sizes; per image, their sizes over the
  // images' count B (each a multiple of B).
  static Status Output(const Dims& x, const Params& params, const TableSizes& sizes, Shape* shape,
                       Dims* y) {
    const bool last = params.layout == SeparableLayout::kChannelsLast;
    const std::size_t rank = x.size();
    if (rank < (last ? 3u : 2u)) {
      return InvalidArgument(std::string("images must have rank ") + (last ? "3" : "2") +
                             " or more (" + (last ? "[..., H, W, C]" : "[..., H, W]") +
                             "); got rank " + std::to_string(rank));
    }
    *y = x;
    if (ElementCount(x) < 0 || sizes[0] < 0 || sizes[1] < 0) return Status::Ok();
    Shape s;
    s.layout = params.layout;
    s.border = params.border;
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
    // Per image over no images is nothing to filter: the tables are taken as they are.
    s.per_image_taps = params.per_image && s.images > 0;
    const std::int64_t blocks = s.per_image_taps ? s.images : 1;
    for (int t = 0; t < 2; ++t) {
      if (sizes[t] % blocks != 0) {
        return InvalidArgument(
            std::string(kTables[t].name) + " must have the same number of taps for each of the " +
            std::to_string(blocks) + " images; got " + std::to_string(sizes[t]) + " entries");
      }
    }
    s.kw = sizes[0] / blocks;
    s.kh = sizes[1] / blocks;
    CONSTMEM_RETURN_IF_ERROR(CheckSeparableArguments(s, s.TableSize()));
    *shape = s;
    return Status::Ok();
  }

  // Both kernels read the two tables as one (JoinSeparableTaps).
  template <class In, class Shard>
  static void RunCpu(const Params&, const Shape& shape, const In* x, In* y,
                     const Tables<In>& tables, const Shard& shard) {
    using T = ComputeTypeOf<In>;
    const std::vector<T> taps = JoinSeparableTaps(shape, tables[0].values, tables[1].values);
    shard(SeparableFilterCpuUnits(shape), SeparableFilterCpuUnitCost(shape),
          [&](std::int64_t begin, std::int64_t end) {
            SeparableFilterCpuRange<In, T>(x, y, shape, taps.data(), begin, end);
          });
  }
  template <class In>
  static Status Launch(GpuStream stream, const Params&, const Shape& shape, const In* x, In* y,
                       const Tables<In>& tables) {
    return LaunchSeparableFilter<In, ComputeTypeOf<In>>(stream, x, y, shape, tables[0], tables[1]);
  }
  // A call's placement is its joined table's; asked of one table of `count` taps, that of a
  // filter with as many taps along each axis.
  template <class In>
  static Placement Place(int /*table*/, std::int64_t count, SourceKind source,
                         std::int64_t launch_elements) {
    return SeparableFilterPlacement<ComputeTypeOf<In>>(2 * count, source, launch_elements);
  }
};

}  // namespace ops
}  // namespace constmem

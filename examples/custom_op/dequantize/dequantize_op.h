// SPDX-License-Identifier: Apache-2.0
// Dequantize, described once for every framework (constmem/op_description.hpp): 4-bit codes, two
// a byte (the first in the high nibble), looked up in a 16-entry codebook and scaled by one absmax
// per block of outputs, as bitsandbytes' dequantize_4bit (NF4 or FP4, by the codebook given):
//
//   y[..., i] = codebook[code(i)] * absmax[flat index of i / block]
//
// The codes are uint8 data; the output's dtype is an attribute, `dtype` (bfloat16 by default,
// float16 or float32): the output rule of the description, not the data's type.
#pragma once

#include <cstdint>
#include <string>

#include "constmem/op_description.hpp"
#include "dequantize/dequantize_functor.h"
#include "dequantize/dequantize_launcher.h"

namespace example {

struct DequantizeOp : constmem::OpDescription {
  static constexpr constmem::OpNames kNames{"example", "Dequantize", "dequantize", "codes",
                                            "codebook"};
  static constexpr constmem::TableSpec kTables[] = {
      {"codebook", 16, 16},
      {"absmax", 1, std::int64_t{1} << 31},
  };
  static constexpr int kTableCount = 2;
  static constexpr constmem::DataTypeSet kDataTypes{constmem::DataType::kUint8};
  static constexpr bool kElementwise = false;  // two outputs a byte
  static constexpr constmem::AttrSpec kAttrs[] = {
      {"block", constmem::AttrKind::kInt64},
      {"dtype", constmem::AttrKind::kDataType, "bfloat16,float16,float32"},
  };
  static constexpr int kAttrCount = 2;
  static constexpr constmem::OutputDType kOutputDType{
      constmem::OutputRule::kAttr,
      {constmem::DataType::kBFloat16, constmem::DataType::kFloat16, constmem::DataType::kFloat32},
      1};

  struct Params {
    std::int64_t block = 64;
    constmem::Status Read(const constmem::AttrValue* values, constmem::DataType) {
      block = values[0].int64;
      if (block < 1 || block > (std::int64_t{1} << 30)) {
        return constmem::InvalidArgument("block must be 1 to 2^30 outputs; got " +
                                         std::to_string(block));
      }
      return constmem::Status::Ok();
    }
  };
  using Shape = DequantizeShape;
  // y has the codes' shape with the last dimension doubled; absmax one entry per block of y.
  static constmem::Status Output(const constmem::Dims& x, const Params& params,
                                 const constmem::TableSizes& sizes, Shape* shape,
                                 constmem::Dims* y) {
    if (x.empty()) return constmem::InvalidArgument("codes must have rank 1 or more; got a scalar");
    *y = x;
    if (x.back() >= 0) y->back() = 2 * x.back();
    const std::int64_t bytes = constmem::ElementCount(x);
    if (bytes < 0 || sizes[kAbsmax] < 0) return constmem::Status::Ok();  // not known yet
    const std::int64_t blocks = (2 * bytes + params.block - 1) / params.block;
    if (sizes[kAbsmax] != blocks) {
      return constmem::InvalidArgument(
          "absmax must have one entry per block of " + std::to_string(params.block) + " outputs (" +
          std::to_string(blocks) + "); got " + std::to_string(sizes[kAbsmax]));
    }
    shape->bytes = bytes;
    shape->block = params.block;
    return constmem::Status::Ok();
  }

  // On the framework's CPU threads, in float32, rounded once to Out.
  template <class T, class Out, class Shard>
  static void RunCpu(const Params&, const Shape& shape, const std::uint8_t* codes, Out* y,
                     const constmem::Tables<T>& tables, const Shard& shard) {
    const float* codebook = tables[kCodebook].values;
    const float* absmax = tables[kAbsmax].values;
    shard(2 * shape.bytes, 2, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        y[i] =
            constmem::FromCompute<Out>(DequantizeOutput(codes, i, codebook, absmax, shape.block));
      }
    });
  }
  template <class T, class Out>
  static constmem::Status Launch(constmem::GpuStream stream, const Params&, const Shape& shape,
                                 const std::uint8_t* codes, Out* y,
                                 const constmem::Tables<T>& tables) {
    return LaunchDequantize<Out>(stream, codes, y, shape, tables[kCodebook], tables[kAbsmax]);
  }
  template <class T>
  static constmem::Placement Place(int table, std::int64_t count, constmem::SourceKind source) {
    return DequantizePlacement(table, count, source);
  }
};

}  // namespace example

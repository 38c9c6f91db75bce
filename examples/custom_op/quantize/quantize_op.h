// SPDX-License-Identifier: Apache-2.0
// Quantize, described once for every framework (constmem/op_description.hpp): bitsandbytes'
// quantize_4bit as its CPU implementation computes it, on the CPU and the GPU alike (NF4 or FP4,
// by the codebook given), the inverse of Dequantize. Float data in, two outputs:
//
//   absmax[b] = max |x| over block b of `block` elements in x's flat order
//   codes[..., k] = the codes of x[..., 2k] (high nibble) and x[..., 2k + 1] (low nibble), each
//                   the codebook level nearest to x / absmax of its block
//
// codes are uint8 and absmax float32 whatever x's dtype: two outputs of fixed dtypes (kOutputs).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "constmem/op_description.hpp"
#include "quantize/quantize_functor.h"
#include "quantize/quantize_launcher.h"

namespace example {

struct QuantizeOp : constmem::OpDescription {
  static constexpr constmem::OpNames kNames{"example", "Quantize", "quantize", "x", "codebook"};
  static constexpr constmem::TableRule kTable{16, 16};
  static constexpr constmem::DataTypeSet kDataTypes{
      constmem::DataType::kFloat32, constmem::DataType::kFloat16, constmem::DataType::kBFloat16};
  static constexpr bool kElementwise = false;  // two codes a byte, an absmax a block
  static constexpr constmem::AttrSpec kAttrs[] = {{"block", constmem::AttrKind::kInt64}};
  static constexpr int kAttrCount = 1;
  static constexpr constmem::OutputSpec kOutputs[] = {
      {"codes", {constmem::OutputRule::kFixed, {constmem::DataType::kUint8}}},
      {"absmax", {constmem::OutputRule::kFixed, {constmem::DataType::kFloat32}}},
  };
  static constexpr int kOutputCount = 2;

  struct Params {
    std::int64_t block = 64;
    constmem::Status Read(const constmem::AttrValue* values, constmem::DataType) {
      block = values[0].int64;
      if (block < 1 || block > (std::int64_t{1} << 30)) {
        return constmem::InvalidArgument("block must be 1 to 2^30 elements; got " +
                                         std::to_string(block));
      }
      return constmem::Status::Ok();
    }
  };
  using Shape = QuantizeShape;
  // codes have x's shape with the last dimension halved (two codes a byte, as Dequantize reads
  // them); absmax one entry per block of x's elements.
  static constmem::Status Output(const constmem::Dims& x, const Params& params, std::int64_t,
                                 Shape* shape, constmem::Dims* y) {
    if (x.empty()) return constmem::InvalidArgument("x must have rank 1 or more; got a scalar");
    if (x.back() >= 0 && x.back() % 2 != 0) {
      return constmem::InvalidArgument("x's last dimension must be even (two codes a byte); got " +
                                       std::to_string(x.back()));
    }
    y[kCodes] = x;
    if (x.back() >= 0) y[kCodes].back() = x.back() / 2;
    const std::int64_t elements = constmem::ElementCount(x);
    y[kAbsmax] = {elements < 0 ? constmem::kUnknownDim
                               : (elements + params.block - 1) / params.block};
    shape->elements = elements;
    shape->block = params.block;
    return constmem::Status::Ok();
  }

  // On the framework's CPU threads: the blocks' absmax, then each byte's two codes (a byte may
  // straddle two blocks where `block` is odd).
  template <class T, class Shard>
  static void RunCpu(const Params&, const Shape& shape, const T* x, const constmem::Outputs& y,
                     const float* codebook, std::int64_t, const Shard& shard) {
    std::uint8_t* codes = y.As<std::uint8_t>(kCodes);
    float* absmax = y.As<float>(kAbsmax);
    const std::int64_t n = shape.elements;
    const std::int64_t blocks = (n + shape.block - 1) / shape.block;
    shard(blocks, shape.block, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t b = begin; b < end; ++b) {
        const std::int64_t last = std::min(n, (b + 1) * shape.block);
        float m = 0.0f;
        for (std::int64_t i = b * shape.block; i < last; ++i) {
          m = AbsMax(m, constmem::ToCompute<float>(x[i]));
        }
        absmax[b] = StoredAbsmax(m, last == (b + 1) * shape.block);
      }
    });
    const QuantizeLevels levels = SortCodebook(codebook);
    shard(n / 2, 32, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t k = begin; k < end; ++k) {
        codes[k] = QuantizeByte(x, k, absmax, n, shape.block, levels);
      }
    });
  }
  template <class T>
  static constmem::Status Launch(constmem::GpuStream stream, const Params&, const Shape& shape,
                                 const T* x, const constmem::Outputs& y,
                                 const constmem::TableView<float>& codebook) {
    return LaunchQuantize<T>(stream, x, y.As<std::uint8_t>(kCodes), y.As<float>(kAbsmax), shape,
                             codebook);
  }
  template <class T>
  static constmem::Placement Place(std::int64_t count, constmem::SourceKind source) {
    return QuantizePlacement(count, source);
  }
};

}  // namespace example

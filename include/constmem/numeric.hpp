// SPDX-License-Identifier: Apache-2.0
// The element types an op's data may have, and how its kernels read and write them. Narrow types
// are computed in a wider one (ComputeTypeOf): float16, bfloat16, uint8 and int8 in float, int32 in
// double (exact for every int32). A kernel reads an element with ToCompute<C>(x) and writes one
// with FromCompute<Out>(v), the same operations on the CPU and the GPU:
//
//   template <class In, class Table>
//   CONSTMEM_HOST_DEVICE In MyElement(In x, const Table& gains) {
//     using C = constmem::ComputeTypeOf<In>;
//     return constmem::FromCompute<In>(constmem::ToCompute<C>(x) * gains[0]);
//   }
//
// Float16 and BFloat16 hold their bits and nothing else: layout-compatible with CUDA's __half and
// __nv_bfloat16, PyTorch's at::Half and at::BFloat16, Eigen's half and bfloat16, and NumPy's and
// JAX's float16 and bfloat16, so a binding passes a framework's buffer as they are. A 16-bit result
// is the computed float rounded to nearest even, exactly what casting a float32 result does in
// each framework.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include "constmem/host_device.hpp"
#include "constmem/visibility.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

// Visible types (visibility.hpp): kept in the fields of a caller's classes and lambdas.
struct CONSTMEM_VISIBLE_TYPE Float16 {
  std::uint16_t bits;
};
struct CONSTMEM_VISIBLE_TYPE BFloat16 {
  std::uint16_t bits;
};
static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2, "16-bit floats are their bits");

// The types data can have, as every binding and message names them.
enum class DataType { kFloat32, kFloat64, kFloat16, kBFloat16, kUint8, kInt8, kInt32 };
constexpr int kDataTypeCount = 7;

constexpr const char* DataTypeName(DataType type) {
  constexpr const char* kNames[] = {"float32", "float64", "float16", "bfloat16",
                                    "uint8",   "int8",    "int32"};
  return kNames[static_cast<int>(type)];
}

// The DataType of C++ element type T.
template <class T>
constexpr DataType DataTypeOf() {
  if constexpr (std::is_same<T, double>::value) return DataType::kFloat64;
  if constexpr (std::is_same<T, Float16>::value) return DataType::kFloat16;
  if constexpr (std::is_same<T, BFloat16>::value) return DataType::kBFloat16;
  if constexpr (std::is_same<T, std::uint8_t>::value) return DataType::kUint8;
  if constexpr (std::is_same<T, std::int8_t>::value) return DataType::kInt8;
  if constexpr (std::is_same<T, std::int32_t>::value) return DataType::kInt32;
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value ||
                    std::is_same<T, Float16>::value || std::is_same<T, BFloat16>::value ||
                    std::is_same<T, std::uint8_t>::value || std::is_same<T, std::int8_t>::value ||
                    std::is_same<T, std::int32_t>::value,
                "not a data type constmem's ops take");
  return DataType::kFloat32;
}

// The bytes of an element of `type`.
constexpr int DataTypeSize(DataType type) {
  constexpr int kSizes[] = {4, 8, 2, 2, 1, 1, 4};
  return kSizes[static_cast<int>(type)];
}

// The C++ type of a DataType.
template <DataType kType>
struct ElementType;
template <>
struct ElementType<DataType::kFloat32> {
  using type = float;
};
template <>
struct ElementType<DataType::kFloat64> {
  using type = double;
};
template <>
struct ElementType<DataType::kFloat16> {
  using type = Float16;
};
template <>
struct ElementType<DataType::kBFloat16> {
  using type = BFloat16;
};
template <>
struct ElementType<DataType::kUint8> {
  using type = std::uint8_t;
};
template <>
struct ElementType<DataType::kInt8> {
  using type = std::int8_t;
};
template <>
struct ElementType<DataType::kInt32> {
  using type = std::int32_t;
};
template <DataType kType>
using ElementTypeOf = typename ElementType<kType>::type;

// A set of DataTypes: what an op's data may be (OpDescription::kDataTypes).
class CONSTMEM_VISIBLE_TYPE DataTypeSet {
 public:
  constexpr DataTypeSet() = default;
  CONSTMEM_HIDDEN constexpr DataTypeSet(std::initializer_list<DataType> types) {
    for (DataType type : types) mask_ |= 1u << static_cast<int>(type);
  }
  CONSTMEM_HIDDEN constexpr bool Has(DataType type) const {
    return (mask_ >> static_cast<int>(type)) & 1u;
  }
  CONSTMEM_HIDDEN constexpr bool empty() const { return mask_ == 0; }

 private:
  unsigned mask_ = 0;
};

// The type data of type T is computed in, and the entries of a table of its type: float for the
// 8- and 16-bit types, double for int32, T itself for float and double.
template <class T>
using ComputeTypeOf =
    std::conditional_t<std::is_same<T, double>::value || std::is_same<T, std::int32_t>::value,
                       double, float>;

namespace detail {

template <class To, class From>
CONSTMEM_HOST_DEVICE To BitCast(From from) {
  static_assert(sizeof(To) == sizeof(From), "same size");
  To to;
  std::memcpy(&to, &from, sizeof(to));
  return to;
}

// IEEE binary16 <-> float, rounding to nearest even (F. Giesen's branch-light conversions; the
// subnormal cases add a magic number so the FPU rounds).
CONSTMEM_HOST_DEVICE float HalfBitsToFloat(std::uint16_t h) {
  constexpr std::uint32_t kShiftedExp = 0x7c00u << 13;
  std::uint32_t o = (h & 0x7fffu) << 13;
  const std::uint32_t exp = kShiftedExp & o;
  o += (127u - 15u) << 23;
  if (exp == kShiftedExp) {
    o += (128u - 16u) << 23;  // Inf and NaN
  } else if (exp == 0) {
    o += 1u << 23;  // zero and subnormal: renormalise
    o = BitCast<std::uint32_t>(BitCast<float>(o) - BitCast<float>(113u << 23));
  }
  return BitCast<float>(o | (static_cast<std::uint32_t>(h & 0x8000u) << 16));
}

CONSTMEM_HOST_DEVICE std::uint16_t FloatToHalfBits(float value) {
  std::uint32_t f = BitCast<std::uint32_t>(value);
  const std::uint32_t sign = f & 0x80000000u;
  f ^= sign;
  std::uint32_t o;
  if (f >= (127u + 16u) << 23) {
    o = f > 0x7f800000u ? 0x7e00u : 0x7c00u;  // NaN stays NaN, the rest overflows to Inf
  } else if (f < 113u << 23) {
    constexpr std::uint32_t kMagic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    o = BitCast<std::uint32_t>(BitCast<float>(f) + BitCast<float>(kMagic)) - kMagic;
  } else {
    const std::uint32_t odd = (f >> 13) & 1u;
    f += ((15u - 127u) << 23) + 0xfffu + odd;
    o = f >> 13;
  }
  return static_cast<std::uint16_t>(o | (sign >> 16));
}

CONSTMEM_HOST_DEVICE std::uint16_t FloatToBFloat16Bits(float value) {
  const std::uint32_t f = BitCast<std::uint32_t>(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((f >> 16) | 0x40u);
  return static_cast<std::uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

// The nearest integer to v, ties to even, clamped to [lo, hi], NaN to 0. Adding and subtracting
// 2^23 rounds a float of magnitude below 2^23 in the default rounding mode (no compiler folds the
// pair without -ffast-math, which nothing here is built with).
CONSTMEM_HOST_DEVICE int RoundClamped(float v, float lo, float hi) {
  float f = v > hi ? hi : v;
  f = f >= lo ? f : lo;  // NaN fails both comparisons: lo, then 0 below
  if (!(v == v)) f = 0.0f;
  constexpr float kMagic = 8388608.0f;
  const float rounded = f >= 0.0f ? (f + kMagic) - kMagic : (f - kMagic) + kMagic;
  return static_cast<int>(rounded);
}

}  // namespace detail

// An element of data as its compute type C.
template <class C, class In>
CONSTMEM_HOST_DEVICE C ToCompute(In x) {
  if constexpr (std::is_same<In, Float16>::value) {
#if defined(__CUDA_ARCH__)
    return static_cast<C>(__half2float(__ushort_as_half(x.bits)));
#else
    return static_cast<C>(detail::HalfBitsToFloat(x.bits));
#endif
  } else if constexpr (std::is_same<In, BFloat16>::value) {
    return static_cast<C>(detail::BitCast<float>(static_cast<std::uint32_t>(x.bits) << 16));
  } else {
    return static_cast<C>(x);
  }
}

// A computed value as an element of type Out: float and double as they are (a double result
// rounded once to float), 16-bit floats rounded to nearest even, integers rounded half to even and
// saturated to Out's range (NaN to 0), as torch.round then a clamp does.
template <class Out, class C>
CONSTMEM_HOST_DEVICE Out FromCompute(C v) {
  if constexpr (std::is_same<Out, Float16>::value) {
#if defined(__CUDA_ARCH__)
    return Out{__half_as_ushort(__float2half_rn(static_cast<float>(v)))};
#else
    return Out{detail::FloatToHalfBits(static_cast<float>(v))};
#endif
  } else if constexpr (std::is_same<Out, BFloat16>::value) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    // cvt.rn.bf16.f32: the same rounding; a NaN becomes the canonical NaN.
    return Out{__bfloat16_as_ushort(__float2bfloat16_rn(static_cast<float>(v)))};
#else
    return Out{detail::FloatToBFloat16Bits(static_cast<float>(v))};
#endif
  } else if constexpr (std::is_same<Out, std::uint8_t>::value) {
#if defined(__CUDA_ARCH__)
    // Round to nearest even, saturate to [0, 255], NaN to 0: one instruction.
    unsigned rounded;
    asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(rounded) : "f"(static_cast<float>(v)));
    return static_cast<Out>(rounded);
#else
    return static_cast<Out>(detail::RoundClamped(static_cast<float>(v), 0.0f, 255.0f));
#endif
  } else if constexpr (std::is_same<Out, std::int8_t>::value) {
#if defined(__CUDA_ARCH__)
    int rounded;
    asm("cvt.rni.sat.s8.f32 %0, %1;" : "=r"(rounded) : "f"(static_cast<float>(v)));
    return static_cast<Out>(rounded);
#else
    return static_cast<Out>(detail::RoundClamped(static_cast<float>(v), -128.0f, 127.0f));
#endif
  } else if constexpr (std::is_same<Out, std::int32_t>::value) {
    const double d = static_cast<double>(v);
    if (!(d == d)) return 0;
    if (d >= 2147483647.0) return 2147483647;
    if (d <= -2147483648.0) return -2147483647 - 1;
#if defined(__CUDA_ARCH__)
    return static_cast<Out>(__double2int_rn(d));
#else
    return static_cast<Out>(std::nearbyint(d));
#endif
  } else {
    return static_cast<Out>(v);
  }
}

}  // namespace constmem
#pragma GCC visibility pop

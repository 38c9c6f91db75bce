// SPDX-License-Identifier: Apache-2.0
// What every op's XLA FFI handlers share. Only XLA's FFI header, a C ABI that TensorFlow's wheel
// and jaxlib both ship: the same handlers serve TensorFlow's XLA lowering (tf/adapter/xla/) and
// JAX (jax.ffi), each compiled against its own copy of the header.
#pragma once

#include <array>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "constmem/cpu_float_mode.hpp"
#include "constmem/status.hpp"
#include "constmem/table.hpp"
#include "xla/ffi/api/ffi.h"

namespace constmem {
namespace xla_ffi {

namespace ffi = ::xla::ffi;

// A Status as an FFI error (kInvalidArgument for bad input, kInternal for anything else).
inline ffi::Error FfiError(const Status& status) {
  if (status.ok()) return ffi::Error::Success();
  const ffi::ErrorCode code = status.code() == StatusCode::kInvalidArgument
                                  ? ffi::ErrorCode::kInvalidArgument
                                  : ffi::ErrorCode::kInternal;
  return ffi::Error(code, status.ToString());
}

// Calls fn(T{}) with T the C++ type of a float32 or float64 buffer.
template <class Fn>
ffi::Error ForFloatType(ffi::DataType type, Fn&& fn) {
  switch (type) {
    case ffi::DataType::F32:
      return fn(float{});
    case ffi::DataType::F64:
      return fn(double{});
    default:
      return ffi::Error(ffi::ErrorCode::kInvalidArgument, "float32 or float64 data");
  }
}

// ForFloatType for a host handler: fn runs with denormals flushed (FTZ and DAZ), as the op's CPU
// kernel does on TensorFlow's CPU threads, whichever thread XLA runs it on.
template <class Fn>
ffi::Error ForFloatTypeOnHost(ffi::DataType type, Fn&& fn) {
  cpu::ScopedFlushDenormals flush;
  return ForFloatType(type, std::forward<Fn>(fn));
}

// A static table as the JAX wrapper sends it: an attribute of float64 values already rounded to T
// (int32 values for an int32 table), in XLA's storage for the call, so the same bytes come at
// every call (the launcher passes them by value or uploads them once per device and content).
template <class T, class Stored>
class StaticTable {
 public:
  explicit StaticTable(ffi::Span<const Stored> values) {
    if constexpr (std::is_same<T, Stored>::value) {
      data_ = values.begin();
    } else {
      converted_.assign(values.begin(), values.end());  // exact: the values are T's
      data_ = converted_.data();
    }
    size_ = static_cast<std::int64_t>(values.size());
  }
  TableView<T> View() const { return {data_, size_, SourceKind::kPageableHost, /*repeats=*/true}; }

 private:
  std::vector<T> converted_;
  const T* data_ = nullptr;
  std::int64_t size_ = 0;
};

template <class T>
constexpr ffi::DataType DataTypeOf() {
  if constexpr (std::is_same<T, float>::value) return ffi::DataType::F32;
  if constexpr (std::is_same<T, double>::value) return ffi::DataType::F64;
  return ffi::DataType::S32;
}

// make() with the attributes of the types A..., named `names` in order, bound after its own.
// (A binding can be neither copied nor moved: each step builds on a call's result.)
template <class... A>
struct BindAttrs;
template <>
struct BindAttrs<> {
  template <class Make>
  static auto To(Make make, const char* const*) {
    return make();
  }
};
template <class A0, class... A>
struct BindAttrs<A0, A...> {
  template <class Make>
  static auto To(Make make, const char* const* names) {
    return BindAttrs<A...>::To([&] { return make().template Attr<A0>(names[0]); }, names + 1);
  }
};

// The defaults of an op's description for TableHandlers: a table of the data's type and no
// attributes but the static forms' `table`.
struct FfiTableOp {
  static constexpr bool kInt32Table = false;  // int32 entries, whatever the data's type
  using Attrs = std::tuple<>;                 // the types of further attributes, in order,
  static constexpr const char* const* kAttrNames = nullptr;  // and their names
};

// An op's four handlers (handlers.h), written once, from a description:
//
//   struct PolyvalFfi : FfiTableOp {
//     template <class T>  // the CPU kernel over all of x
//     static Status RunOnHost(const ffi::AnyBuffer& x, T* y, const TableView<T>& coeffs);
//     template <class T>  // the GPU launcher on XLA's stream
//     static Status RunOnCuda(GpuStream, const ffi::AnyBuffer& x, T* y, const TableView<T>&
//     coeffs);
//   };
//
// Both take the op's further attributes after the table. The table comes as a buffer (host memory
// for "host", device memory for "cuda") or, in the static forms, as the attribute `table`.
template <class Op, class Attrs = typename Op::Attrs>
struct TableHandlers;
template <class Op, class... A>
struct TableHandlers<Op, std::tuple<A...>> {
  template <class T>
  using Entry = std::conditional_t<Op::kInt32Table, std::int32_t, T>;
  using Stored = std::conditional_t<Op::kInt32Table, std::int32_t, double>;
  using StaticSpan = ffi::Span<const Stored>;

  template <class T>
  static ffi::Error CheckTable(const ffi::AnyBuffer& table) {
    if (table.element_type() == DataTypeOf<Entry<T>>()) return ffi::Error::Success();
    return ffi::Error(ffi::ErrorCode::kInvalidArgument,
                      Op::kInt32Table ? "the table must be int32" : "the table must be x's dtype");
  }
  template <class T>
  static TableView<Entry<T>> DeviceView(const ffi::AnyBuffer& table, SourceKind source) {
    return {table.typed_data<Entry<T>>(), static_cast<std::int64_t>(table.element_count()), source};
  }

  static ffi::Error Host(ffi::AnyBuffer x, ffi::AnyBuffer table, ffi::Result<ffi::AnyBuffer> y,
                         A... attrs) {
    return ForFloatTypeOnHost(x.element_type(), [&](auto zero) {
      using T = decltype(zero);
      if (ffi::Error error = CheckTable<T>(table); error.failure()) return error;
      return FfiError(Op::template RunOnHost<T>(
          x, y->typed_data<T>(), DeviceView<T>(table, SourceKind::kPageableHost), attrs...));
    });
  }
  static ffi::Error StaticHost(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y, A... attrs,
                               StaticSpan table) {
    return ForFloatTypeOnHost(x.element_type(), [&](auto zero) {
      using T = decltype(zero);
      const StaticTable<Entry<T>, Stored> values(table);
      return FfiError(Op::template RunOnHost<T>(x, y->typed_data<T>(), values.View(), attrs...));
    });
  }
#if CONSTMEM_WITH_GPU
  static ffi::Error Cuda(GpuStream stream, ffi::AnyBuffer x, ffi::AnyBuffer table,
                         ffi::Result<ffi::AnyBuffer> y, A... attrs) {
    return ForFloatType(x.element_type(), [&](auto zero) {
      using T = decltype(zero);
      if (ffi::Error error = CheckTable<T>(table); error.failure()) return error;
      return FfiError(Op::template RunOnCuda<T>(
          stream, x, y->typed_data<T>(), DeviceView<T>(table, SourceKind::kDevice), attrs...));
    });
  }
  static ffi::Error StaticCuda(GpuStream stream, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                               A... attrs, StaticSpan table) {
    return ForFloatType(x.element_type(), [&](auto zero) {
      using T = decltype(zero);
      const StaticTable<Entry<T>, Stored> values(table);
      return FfiError(
          Op::template RunOnCuda<T>(stream, x, y->typed_data<T>(), values.View(), attrs...));
    });
  }
#endif

  static auto HostBinding() {
    return BindAttrs<A...>::To(
        [] {
          return ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>();
        },
        Op::kAttrNames);
  }
  static auto StaticHostBinding() {
    return BindAttrs<A..., StaticSpan>::To(
        [] { return ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>(); },
        AttrNamesAndTable());
  }
  static auto CudaBinding() {
    return BindAttrs<A...>::To(
        [] {
          return ffi::Ffi::Bind()
              .Ctx<ffi::PlatformStream<GpuStream>>()
              .Arg<ffi::AnyBuffer>()
              .Arg<ffi::AnyBuffer>()
              .Ret<ffi::AnyBuffer>();
        },
        Op::kAttrNames);
  }
  static auto StaticCudaBinding() {
    return BindAttrs<A..., StaticSpan>::To(
        [] {
          return ffi::Ffi::Bind()
              .Ctx<ffi::PlatformStream<GpuStream>>()
              .Arg<ffi::AnyBuffer>()
              .Ret<ffi::AnyBuffer>();
        },
        AttrNamesAndTable());
  }
  static const char* const* AttrNamesAndTable() {
    static const auto names = [] {
      std::array<const char*, sizeof...(A) + 1> all{};
      for (std::size_t i = 0; i < sizeof...(A); ++i) all[i] = Op::kAttrNames[i];
      all[sizeof...(A)] = "table";
      return all;
    }();
    return names.data();
  }
};

}  // namespace xla_ffi
}  // namespace constmem

// The op's handler symbols prefix_host, prefix_static_host, prefix_cuda and prefix_static_cuda
// (the last two with GPU kernels), from the description `op` (TableHandlers above).
#define CONSTMEM_DETAIL_FFI_HANDLER(symbol, op, form, ...)  \
  XLA_FFI_DEFINE_HANDLER_SYMBOL(                            \
      symbol, ::constmem::xla_ffi::TableHandlers<op>::form, \
      ::constmem::xla_ffi::TableHandlers<op>::form##Binding(), ##__VA_ARGS__)
#if CONSTMEM_WITH_GPU
#define CONSTMEM_DEFINE_FFI_TABLE_HANDLERS(prefix, op)                     \
  CONSTMEM_DETAIL_FFI_HANDLER(prefix##_host, op, Host);                    \
  CONSTMEM_DETAIL_FFI_HANDLER(prefix##_static_host, op, StaticHost);       \
  CONSTMEM_DETAIL_FFI_HANDLER(prefix##_cuda, op, Cuda,                     \
                              {::xla::ffi::Traits::kCmdBufferCompatible}); \
  CONSTMEM_DETAIL_FFI_HANDLER(prefix##_static_cuda, op, StaticCuda,        \
                              {::xla::ffi::Traits::kCmdBufferCompatible})
#else
#define CONSTMEM_DEFINE_FFI_TABLE_HANDLERS(prefix, op)  \
  CONSTMEM_DETAIL_FFI_HANDLER(prefix##_host, op, Host); \
  CONSTMEM_DETAIL_FFI_HANDLER(prefix##_static_host, op, StaticHost)
#endif

// SPDX-License-Identifier: Apache-2.0
// An op's XLA FFI handlers, made from its description (constmem/op_description.hpp). Only XLA's
// FFI header, a C ABI that TensorFlow's wheel and jaxlib both ship: the same handlers serve
// TensorFlow's XLA lowering (tf/adapter/) and JAX (jax.ffi), each compiled against its own copy
// of the header.
//
// Each op has four handlers: "host" runs the CPU kernel, "cuda" the GPU launcher on XLA's stream
// with the table read from device memory, and the "static" forms take the table as an attribute
// `table` instead (float64 values already rounded to the table's dtype, or int32 values), host
// memory whose bytes repeat at every call. The op's own attributes come by name, as their kinds
// say: a choice as a string, a float64 as f64, an int64 as i64.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "constmem/cpu_float_mode.hpp"
#include "constmem/op_description.hpp"
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

inline const char* DataTypeName(ffi::DataType type) {
  switch (type) {
    case ffi::DataType::F32:
      return "float32";
    case ffi::DataType::F64:
      return "float64";
    case ffi::DataType::S32:
      return "int32";
    case ffi::DataType::U8:
      return "uint8";
    default:
      return "another dtype";
  }
}

// Calls fn(T{}) with T the C++ type of the float32 or float64 buffer `name` (float32 alone unless
// kFloat64).
template <bool kFloat64 = true, class Fn>
ffi::Error ForFloatType(ffi::DataType type, const char* name, Fn&& fn) {
  if (type == ffi::DataType::F32) return fn(float{});
  if constexpr (kFloat64) {
    if (type == ffi::DataType::F64) return fn(double{});
  }
  return ffi::Error(ffi::ErrorCode::kInvalidArgument,
                    std::string(name) +
                        (kFloat64 ? " must be float32 or float64" : " must be float32") + "; got " +
                        DataTypeName(type));
}

// ForFloatType for a host handler: fn runs with denormals flushed (FTZ and DAZ), as the op's CPU
// kernel does on TensorFlow's CPU threads, whichever thread XLA runs it on.
template <bool kFloat64 = true, class Fn>
ffi::Error ForFloatTypeOnHost(ffi::DataType type, const char* name, Fn&& fn) {
  cpu::ScopedFlushDenormals flush;
  return ForFloatType<kFloat64>(type, name, std::forward<Fn>(fn));
}

// Calls fn(T{}) with T the C++ type of Op's data buffer `name`: float, double (kFloat64) or
// std::uint8_t (kUint8); else an error listing the types Op takes.
template <class Op, class Fn>
ffi::Error ForDataType(ffi::DataType type, const char* name, Fn&& fn) {
  if (type == ffi::DataType::F32) return fn(float{});
  if constexpr (Op::kFloat64) {
    if (type == ffi::DataType::F64) return fn(double{});
  }
  if constexpr (Op::kUint8) {
    if (type == ffi::DataType::U8) return fn(std::uint8_t{});
  }
  return ffi::Error(
      ffi::ErrorCode::kInvalidArgument,
      std::string(name) + " must be " + DataTypeList<Op>() + "; got " + DataTypeName(type));
}

// ForDataType for a host handler, with denormals flushed (ForFloatTypeOnHost).
template <class Op, class Fn>
ffi::Error ForDataTypeOnHost(ffi::DataType type, const char* name, Fn&& fn) {
  cpu::ScopedFlushDenormals flush;
  return ForDataType<Op>(type, name, std::forward<Fn>(fn));
}

template <class T>
constexpr ffi::DataType DataTypeOf() {
  if constexpr (std::is_same<T, float>::value) return ffi::DataType::F32;
  if constexpr (std::is_same<T, double>::value) return ffi::DataType::F64;
  if constexpr (std::is_same<T, std::uint8_t>::value) return ffi::DataType::U8;
  return ffi::DataType::S32;
}

inline Dims DimsOf(const ffi::AnyBuffer& buffer) {
  const auto dims = buffer.dimensions();
  return Dims(dims.begin(), dims.end());
}

// An op's handlers (see the top of this file).
template <class Op>
struct TableHandlers {
  template <class T>
  using Entry = TableEntryOf<Op, T>;
  using Stored = std::conditional_t<Op::kTable.int32, std::int32_t, double>;

  // The op's Params and launch Shape for x and a table of `size`, checked against y's buffer.
  template <class T>
  static Status Prepare(const ffi::Dictionary& attrs, const ffi::AnyBuffer& x,
                        const ffi::AnyBuffer& y, std::int64_t size, typename Op::Params* params,
                        typename Op::Shape* shape) {
    std::array<AttrValue, Op::kAttrCount + 1> values{};
    for (int i = 0; i < Op::kAttrCount; ++i) {
      const AttrSpec& spec = Op::kAttrs[i];
      bool found = false;
      if (spec.kind == AttrKind::kChoice) {
        auto value = attrs.get<std::string_view>(spec.name);
        if ((found = value.has_value())) values[i].choice = *value;
      } else if (spec.kind == AttrKind::kFloat64) {
        auto value = attrs.get<double>(spec.name);
        if ((found = value.has_value())) values[i].float64 = *value;
      } else {
        auto value = attrs.get<std::int64_t>(spec.name);
        if ((found = value.has_value())) values[i].int64 = *value;
      }
      if (!found) {
        return InvalidArgument(std::string(Op::kNames.name) + " needs the attribute " + spec.name);
      }
    }
    CONSTMEM_RETURN_IF_ERROR(CheckTableSize<Op>(size));
    CONSTMEM_RETURN_IF_ERROR(ReadParams<Op>(values.data(), ::constmem::DataTypeOf<T>(), params));
    Dims y_dims;
    CONSTMEM_RETURN_IF_ERROR(Op::Output(DimsOf(x), *params, size, shape, &y_dims));
    if (y_dims != DimsOf(y)) {
      return InvalidArgument(std::string(Op::kNames.name) +
                             ": the result buffer's shape is not the op's output shape");
    }
    return Status::Ok();
  }

  template <class T>
  static Status CheckTable(const ffi::AnyBuffer& table) {
    if (table.element_type() == DataTypeOf<Entry<T>>()) return Status::Ok();
    return InvalidArgument(std::string(Op::kNames.table) + " must be " +
                           DataTypeName(DataTypeOf<Entry<T>>()) + "; got " +
                           DataTypeName(table.element_type()));
  }

  // Runs the CPU kernel over all of x, the table converted where the op asks for it.
  template <class T>
  static Status RunOnHost(const ffi::Dictionary& attrs, const ffi::AnyBuffer& x, ffi::AnyBuffer& y,
                          const Entry<T>* table, std::int64_t size) {
    typename Op::Params params;
    typename Op::Shape shape;
    CONSTMEM_RETURN_IF_ERROR(Prepare<T>(attrs, x, y, size, &params, &shape));
    if constexpr (std::is_same<CpuTableEntryOf<Op, T>, Entry<T>>::value) {
      Op::template RunCpu<T>(params, shape, x.typed_data<T>(), y.typed_data<T>(), table, size,
                             SerialShard{});
    } else {
      const std::vector<CpuTableEntryOf<Op, T>> converted(table, table + size);
      Op::template RunCpu<T>(params, shape, x.typed_data<T>(), y.typed_data<T>(), converted.data(),
                             size, SerialShard{});
    }
    return Status::Ok();
  }

  // The static forms' attribute `table`: float64 values already rounded to T (exact in T), or
  // int32 values.
  template <class T>
  static Status StaticTable(const ffi::Dictionary& attrs, std::vector<Entry<T>>* converted,
                            TableView<Entry<T>>* view) {
    auto values = attrs.get<ffi::Span<const Stored>>("table");
    if (!values.has_value()) {
      return InvalidArgument(std::string(Op::kNames.name) + " needs the attribute table");
    }
    const auto size = static_cast<std::int64_t>(values->size());
    if constexpr (std::is_same<Entry<T>, Stored>::value) {
      *view = {values->begin(), size, SourceKind::kPageableHost, /*repeats=*/true};
    } else {
      converted->assign(values->begin(), values->end());
      *view = {converted->data(), size, SourceKind::kPageableHost, /*repeats=*/true};
    }
    return Status::Ok();
  }

  static ffi::Error Host(ffi::AnyBuffer x, ffi::AnyBuffer table, ffi::Result<ffi::AnyBuffer> y,
                         ffi::Dictionary attrs) {
    return ForDataTypeOnHost<Op>(x.element_type(), Op::kNames.data, [&](auto zero) {
      using T = decltype(zero);
      if (Status status = CheckTable<T>(table); !status.ok()) return FfiError(status);
      return FfiError(RunOnHost<T>(attrs, x, *y, table.typed_data<Entry<T>>(),
                                   static_cast<std::int64_t>(table.element_count())));
    });
  }
  static ffi::Error StaticHost(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                               ffi::Dictionary attrs) {
    return ForDataTypeOnHost<Op>(x.element_type(), Op::kNames.data, [&](auto zero) {
      using T = decltype(zero);
      std::vector<Entry<T>> converted;
      TableView<Entry<T>> view;
      if (Status status = StaticTable<T>(attrs, &converted, &view); !status.ok()) {
        return FfiError(status);
      }
      return FfiError(RunOnHost<T>(attrs, x, *y, view.values, view.size));
    });
  }
#if CONSTMEM_WITH_GPU
  template <class T>
  static Status RunOnCuda(GpuStream stream, const ffi::Dictionary& attrs, const ffi::AnyBuffer& x,
                          ffi::AnyBuffer& y, const TableView<Entry<T>>& table) {
    typename Op::Params params;
    typename Op::Shape shape;
    CONSTMEM_RETURN_IF_ERROR(Prepare<T>(attrs, x, y, table.size, &params, &shape));
    return Op::template Launch<T>(stream, params, shape, x.typed_data<T>(), y.typed_data<T>(),
                                  table);
  }
  static ffi::Error Cuda(GpuStream stream, ffi::AnyBuffer x, ffi::AnyBuffer table,
                         ffi::Result<ffi::AnyBuffer> y, ffi::Dictionary attrs) {
    return ForDataType<Op>(x.element_type(), Op::kNames.data, [&](auto zero) {
      using T = decltype(zero);
      if (Status status = CheckTable<T>(table); !status.ok()) return FfiError(status);
      const TableView<Entry<T>> view{table.typed_data<Entry<T>>(),
                                     static_cast<std::int64_t>(table.element_count()),
                                     SourceKind::kDevice};
      return FfiError(RunOnCuda<T>(stream, attrs, x, *y, view));
    });
  }
  static ffi::Error StaticCuda(GpuStream stream, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                               ffi::Dictionary attrs) {
    return ForDataType<Op>(x.element_type(), Op::kNames.data, [&](auto zero) {
      using T = decltype(zero);
      std::vector<Entry<T>> converted;
      TableView<Entry<T>> view;
      if (Status status = StaticTable<T>(attrs, &converted, &view); !status.ok()) {
        return FfiError(status);
      }
      return FfiError(RunOnCuda<T>(stream, attrs, x, *y, view));
    });
  }
#endif

  // The handlers as XLA calls them.
  static XLA_FFI_Error* HostHandler(XLA_FFI_CallFrame* frame) {
    static auto* handler = ffi::Ffi::Bind()
                               .Arg<ffi::AnyBuffer>()
                               .Arg<ffi::AnyBuffer>()
                               .Ret<ffi::AnyBuffer>()
                               .Attrs<ffi::Dictionary>()
                               .To(Host)
                               .release();
    return handler->Call(frame);
  }
  static XLA_FFI_Error* StaticHostHandler(XLA_FFI_CallFrame* frame) {
    static auto* handler = ffi::Ffi::Bind()
                               .Arg<ffi::AnyBuffer>()
                               .Ret<ffi::AnyBuffer>()
                               .Attrs<ffi::Dictionary>()
                               .To(StaticHost)
                               .release();
    return handler->Call(frame);
  }
#if CONSTMEM_WITH_GPU
  static XLA_FFI_Error* CudaHandler(XLA_FFI_CallFrame* frame) {
    static auto* handler = ffi::Ffi::Bind()
                               .Ctx<ffi::PlatformStream<GpuStream>>()
                               .Arg<ffi::AnyBuffer>()
                               .Arg<ffi::AnyBuffer>()
                               .Ret<ffi::AnyBuffer>()
                               .Attrs<ffi::Dictionary>()
                               .To(Cuda, {ffi::Traits::kCmdBufferCompatible})
                               .release();
    return handler->Call(frame);
  }
  static XLA_FFI_Error* StaticCudaHandler(XLA_FFI_CallFrame* frame) {
    static auto* handler = ffi::Ffi::Bind()
                               .Ctx<ffi::PlatformStream<GpuStream>>()
                               .Arg<ffi::AnyBuffer>()
                               .Ret<ffi::AnyBuffer>()
                               .Attrs<ffi::Dictionary>()
                               .To(StaticCuda, {ffi::Traits::kCmdBufferCompatible})
                               .release();
    return handler->Call(frame);
  }
#endif
};

// The handler of the FFI target `target` ("library_name" or "library_name_static") for
// `platform` ("cpu" or "CUDA") among Ops..., or nullptr: what an op library exports so that
// its Python package registers every op's handlers from the op registry alone.
template <class... Ops>
void* FindTableHandler(const char* target, const char* platform) {
  const std::string_view wanted(target);
  const bool cuda = std::string_view(platform) == "CUDA";
  void* found = nullptr;
  auto match = [&](auto* op) {
    using Op = std::remove_pointer_t<decltype(op)>;
    const std::string base = std::string(Op::kNames.library) + "_" + Op::kNames.name;
    const bool is_static = wanted == base + "_static";
    if (found != nullptr || (wanted != base && !is_static)) return;
    if (!cuda) {
      found = reinterpret_cast<void*>(is_static ? &TableHandlers<Op>::StaticHostHandler
                                                : &TableHandlers<Op>::HostHandler);
    }
#if CONSTMEM_WITH_GPU
    if (cuda) {
      found = reinterpret_cast<void*>(is_static ? &TableHandlers<Op>::StaticCudaHandler
                                                : &TableHandlers<Op>::CudaHandler);
    }
#endif
  };
  (match(static_cast<Ops*>(nullptr)), ...);
  return found;
}

}  // namespace xla_ffi
}  // namespace constmem

// Exports `void* symbol(const char* target, const char* platform)`: FindTableHandler over Ops.
#define CONSTMEM_EXPORT_FFI_HANDLERS(symbol, ...)                                        \
  extern "C" __attribute__((visibility("default"))) void* symbol(const char* target,     \
                                                                 const char* platform) { \
    return ::constmem::xla_ffi::FindTableHandler<__VA_ARGS__>(target, platform);         \
  }

// SPDX-License-Identifier: Apache-2.0
// An op's XLA FFI handlers, made from its description (constmem/op_description.hpp). Only XLA's
// FFI header, a C ABI that TensorFlow's wheel and jaxlib both ship: the same handlers serve
// TensorFlow's XLA lowering (tf/adapter/) and JAX (jax.ffi), each compiled against its own copy
// of the header.
//
// Each op has four handlers: "host" runs the CPU kernel, "cuda" the GPU launcher on XLA's stream
// with the tables read from device memory; both take the operands (x, table_0, ..., table_{N-1})
// in the op's order. The "static" forms take x alone and each table as an attribute instead,
// named by the table (`table` for an op with one): float64 values already rounded to the table's
// dtype, or int32 values, host memory whose bytes repeat at every call. Each form gives one
// result per output of the op, in its order. The op's own attributes come by name, as their kinds
// say: a choice as a string, a float64 as f64, an int64 as i64.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

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

// The DataType of an XLA element type, or nothing for one no op takes.
inline std::optional<DataType> DataTypeOfElement(ffi::DataType type) {
  switch (type) {
    case ffi::DataType::F32:
      return DataType::kFloat32;
    case ffi::DataType::F64:
      return DataType::kFloat64;
    case ffi::DataType::F16:
      return DataType::kFloat16;
    case ffi::DataType::BF16:
      return DataType::kBFloat16;
    case ffi::DataType::U8:
      return DataType::kUint8;
    case ffi::DataType::S8:
      return DataType::kInt8;
    case ffi::DataType::S32:
      return DataType::kInt32;
    default:
      return std::nullopt;
  }
}

inline const char* DataTypeName(ffi::DataType type) {
  const std::optional<DataType> known = DataTypeOfElement(type);
  return known ? ::constmem::DataTypeName(*known) : "another dtype";
}

// Calls fn(T{}) with T the C++ type of Op's data buffer `name` among those Op takes (kDataTypes);
// else an error listing them.
template <class Op, class Fn>
ffi::Error ForDataType(ffi::DataType type, const char* name, Fn&& fn) {
  const std::optional<DataType> known = DataTypeOfElement(type);
  if (known && TakesDataType<Op>(*known)) return VisitDataType<Op>(*known, std::forward<Fn>(fn));
  return ffi::Error(
      ffi::ErrorCode::kInvalidArgument,
      std::string(name) + " must be " + DataTypeList<Op>() + "; got " + DataTypeName(type));
}

// The XLA element type of C++ type T.
template <class T>
constexpr ffi::DataType DataTypeOf() {
  constexpr ffi::DataType kTypes[] = {ffi::DataType::F32,  ffi::DataType::F64, ffi::DataType::F16,
                                      ffi::DataType::BF16, ffi::DataType::U8,  ffi::DataType::S8,
                                      ffi::DataType::S32};
  return kTypes[static_cast<int>(::constmem::DataTypeOf<T>())];
}

inline Dims DimsOf(const ffi::AnyBuffer& buffer) {
  const auto dims = buffer.dimensions();
  return Dims(dims.begin(), dims.end());
}

// fn()'s error, or an internal one for an exception (std::bad_alloc of a large table): a handler
// is called through XLA's C ABI, which no exception may cross.
template <class Fn>
ffi::Error Guarded(Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::exception& e) {
    return ffi::Error(ffi::ErrorCode::kResourceExhausted, e.what());
  }
}

// An op's handlers (see the top of this file), for its one table or its several alike.
template <class Op>
struct TableHandlers {
  static constexpr int kCount = TableCountOf<Op>();
  template <class T, int I = 0>
  using Entry = TableEntryOf<Op, T, I>;
  // A call's table buffers, in the op's order.
  using Buffers = std::array<const ffi::AnyBuffer*, kCount>;

  // The static forms' attribute holding table i: the table's name, or `table` for an op with one.
  static constexpr const char* StaticAttr(int i) {
    return kSeveralTables<Op> ? TableSpecOf<Op>(i).name : "table";
  }

  // A call's result buffers, in the op's order of outputs (no allocation a call).
  using Results = std::array<std::optional<ffi::AnyBuffer>, OutputCountOf<Op>()>;

  // The result buffers XLA gives, as many as the op has outputs: a direct caller (jax.ffi.ffi_call)
  // may give any count, and none is written unless each is what the op writes (Prepare).
  static Status DecodeResults(const ffi::RemainingRets& rets, Results* results) {
    constexpr int kOutputs = OutputCountOf<Op>();
    if (rets.size() != static_cast<std::size_t>(kOutputs)) {
      std::string names;
      for (int i = 0; i < kOutputs; ++i)
        names += (i > 0 ? ", " : "") + std::string(OutputSpecOf<Op>(i).name);
      return InvalidArgument(std::string(Op::kNames.library) + "_" + Op::kNames.name + " gives " +
                             std::to_string(kOutputs) +
                             (kOutputs == 1 ? " result (" : " results (") + names + "); got " +
                             std::to_string(rets.size()));
    }
    for (int i = 0; i < kOutputs; ++i) {
      auto result = rets.get<ffi::AnyBuffer>(i);
      if (!result.has_value()) {
        return InvalidArgument(OutputName<Op>(i) + " must be a buffer");
      }
      (*results)[i].emplace(**result);
    }
    return Status::Ok();
  }

  // The op's Params and launch Shape for x and tables of `sizes`, each result buffer checked
  // against the output the description gives (its dtype and dims), and `outputs` set from them.
  template <class T>
  static Status Prepare(const ffi::Dictionary& attrs, const ffi::AnyBuffer& x, const Results& y,
                        const TableSizes& sizes, typename Op::Params* params,
                        typename Op::Shape* shape, Outputs* outputs) {
    std::array<AttrValue, Op::kAttrCount + 1> values{};
    for (int i = 0; i < Op::kAttrCount; ++i) {
      const AttrSpec& spec = Op::kAttrs[i];
      bool found = false;
      if (spec.kind == AttrKind::kChoice || spec.kind == AttrKind::kDataType) {
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
    CONSTMEM_RETURN_IF_ERROR(CheckTableSizes<Op>(sizes));
    CONSTMEM_RETURN_IF_ERROR(ReadParams<Op>(values.data(), ::constmem::DataTypeOf<T>(), params));
    // A direct caller's buffers are what they say they are, nothing more: each dimension known,
    // each result of its output's dtype and of the shape the description gives.
    CONSTMEM_RETURN_IF_ERROR(CheckDimensions(DimsOf(x), Op::kNames.data));
    OutputDims y_dims;
    for (int i = 0; i < OutputCountOf<Op>(); ++i) {
      const ffi::AnyBuffer& buffer = *y[i];
      const std::string result = OutputName<Op>(i);
      CONSTMEM_RETURN_IF_ERROR(CheckDimensions(DimsOf(buffer), result.c_str()));
      const DataType output = OutputDataTypeOf<Op>(i, ::constmem::DataTypeOf<T>(), values.data());
      if (DataTypeOfElement(buffer.element_type()) != output) {
        const std::string why = kOutputIsData<Op>
                                    ? std::string(Op::kNames.data) + "'s dtype"
                                    : std::string(Op::kNames.name) + "'s output dtype";
        return InvalidArgument(result + " must be " + ::constmem::DataTypeName(output) + " (" +
                               why + "); got " + DataTypeName(buffer.element_type()));
      }
      outputs->Set(i, buffer.untyped_data(), output);
    }
    CONSTMEM_RETURN_IF_ERROR(OutputOf<Op>(DimsOf(x), *params, sizes, shape, y_dims.data()));
    for (int i = 0; i < OutputCountOf<Op>(); ++i) {
      if (y_dims[i] != DimsOf(*y[i])) {
        return InvalidArgument(OutputName<Op>(i) + " must have shape " + DimsString(y_dims[i]) +
                               " for " + Op::kNames.data + " of shape " + DimsString(DimsOf(x)) +
                               "; got " + DimsString(DimsOf(*y[i])));
      }
    }
    return Status::Ok();
  }

  // Every dimension of a buffer is 0 or more.
  static Status CheckDimensions(const Dims& dims, const char* name) {
    if (std::all_of(dims.begin(), dims.end(), [](std::int64_t d) { return d >= 0; })) {
      return Status::Ok();
    }
    return InvalidArgument(std::string(name) + " must have dimensions of 0 or more; got " +
                           DimsString(dims));
  }

  // Table I's buffer into `tables`, its dtype checked under the table's name.
  template <class T, int I>
  static Status SetBuffer(const ffi::AnyBuffer& buffer, SourceKind source, Tables<T>* tables) {
    using E = Entry<T, I>;
    if (buffer.dimensions().size() != 1) {
      return InvalidArgument(std::string(TableSpecOf<Op>(I).name) +
                             " must be a vector (rank 1); got shape " + DimsString(DimsOf(buffer)));
    }
    CONSTMEM_RETURN_IF_ERROR(CheckDimensions(DimsOf(buffer), TableSpecOf<Op>(I).name));
    if (buffer.element_type() != DataTypeOf<E>()) {
      return InvalidArgument(std::string(TableSpecOf<Op>(I).name) + " must be " +
                             DataTypeName(DataTypeOf<E>()) + "; got " +
                             DataTypeName(buffer.element_type()));
    }
    tables->Set(I, TableView<E>{buffer.typed_data<E>(),
                                static_cast<std::int64_t>(buffer.element_count()), source});
    return Status::Ok();
  }
  template <class T, std::size_t... I>
  static Status BufferTables(const Buffers& buffers, SourceKind source, Tables<T>* tables,
                             std::index_sequence<I...>) {
    Status status;
    (void)((status = SetBuffer<T, static_cast<int>(I)>(*buffers[I], source, tables)).ok() && ...);
    return status;
  }

  // Table I from the static forms' attribute: float64 values already rounded to T (exact in T), or
  // int32 values; float32 entries are converted into `converted`.
  template <class T, int I>
  static Status SetAttr(const ffi::Dictionary& attrs, std::vector<ComputeTypeOf<T>>* converted,
                        Tables<T>* tables) {
    using E = Entry<T, I>;
    using Stored = std::conditional_t<TableSpecOf<Op>(I).int32, std::int32_t, double>;
    auto values = attrs.get<ffi::Span<const Stored>>(StaticAttr(I));
    if (!values.has_value()) {
      return InvalidArgument(std::string(Op::kNames.name) + " needs the attribute " +
                             StaticAttr(I));
    }
    const auto size = static_cast<std::int64_t>(values->size());
    if constexpr (std::is_same<E, Stored>::value) {
      tables->Set(I, TableView<E>{values->begin(), size, SourceKind::kPageableHost,
                                  /*repeats=*/true});
    } else {
      converted->resize(values->size());
      std::transform(values->begin(), values->end(), converted->begin(), RoundFromFloat64<E>);
      tables->Set(I, TableView<E>{converted->data(), size, SourceKind::kPageableHost,
                                  /*repeats=*/true});
    }
    return Status::Ok();
  }
  template <class T>
  using Converted = std::array<std::vector<ComputeTypeOf<T>>, kCount>;
  template <class T, std::size_t... I>
  static Status AttrTables(const ffi::Dictionary& attrs, Converted<T>* converted, Tables<T>* tables,
                           std::index_sequence<I...>) {
    Status status;
    (void)((status = SetAttr<T, static_cast<int>(I)>(attrs, &(*converted)[I], tables)).ok() && ...);
    return status;
  }

  // Runs the CPU kernel over all of x, once every result is checked.
  template <class T>
  static Status RunOnHost(const ffi::Dictionary& attrs, const ffi::AnyBuffer& x,
                          const ffi::RemainingRets& rets, const Tables<T>& tables) {
    typename Op::Params params;
    typename Op::Shape shape;
    Results y;
    Outputs outputs;
    CONSTMEM_RETURN_IF_ERROR(DecodeResults(rets, &y));
    CONSTMEM_RETURN_IF_ERROR(Prepare<T>(attrs, x, y, tables.Sizes(), &params, &shape, &outputs));
    RunCpuOf<Op, T>(params, shape, static_cast<const T*>(x.untyped_data()), outputs, tables,
                    SerialShard{});
    return Status::Ok();
  }

  static ffi::Error Host(const ffi::AnyBuffer& x, const Buffers& buffers,
                         const ffi::RemainingRets& y, const ffi::Dictionary& attrs) {
    return Guarded([&] {
      return ForDataType<Op>(x.element_type(), Op::kNames.data, [&](auto zero) {
        using T = decltype(zero);
        Tables<T> tables;
        Status status = BufferTables<T>(buffers, SourceKind::kPageableHost, &tables,
                                        std::make_index_sequence<kCount>{});
        if (status.ok()) status = RunOnHost<T>(attrs, x, y, tables);
        return FfiError(status);
      });
    });
  }
  static ffi::Error StaticHost(ffi::AnyBuffer x, ffi::RemainingRets y, ffi::Dictionary attrs) {
    return Guarded([&] {
      return ForDataType<Op>(x.element_type(), Op::kNames.data, [&](auto zero) {
        using T = decltype(zero);
        Converted<T> converted;
        Tables<T> tables;
        Status status =
            AttrTables<T>(attrs, &converted, &tables, std::make_index_sequence<kCount>{});
        if (status.ok()) status = RunOnHost<T>(attrs, x, y, tables);
        return FfiError(status);
      });
    });
  }
#if CONSTMEM_WITH_GPU
  template <class T>
  static Status RunOnCuda(GpuStream stream, const ffi::Dictionary& attrs, const ffi::AnyBuffer& x,
                          const ffi::RemainingRets& rets, const Tables<T>& tables) {
    typename Op::Params params;
    typename Op::Shape shape;
    Results y;
    Outputs outputs;
    CONSTMEM_RETURN_IF_ERROR(DecodeResults(rets, &y));
    CONSTMEM_RETURN_IF_ERROR(Prepare<T>(attrs, x, y, tables.Sizes(), &params, &shape, &outputs));
    return LaunchOf<Op, T>(stream, params, shape, static_cast<const T*>(x.untyped_data()), outputs,
                           tables);
  }
  static ffi::Error Cuda(GpuStream stream, const ffi::AnyBuffer& x, const Buffers& buffers,
                         const ffi::RemainingRets& y, const ffi::Dictionary& attrs) {
    return Guarded([&] {
      return ForDataType<Op>(x.element_type(), Op::kNames.data, [&](auto zero) {
        using T = decltype(zero);
        Tables<T> tables;
        Status status = BufferTables<T>(buffers, SourceKind::kDevice, &tables,
                                        std::make_index_sequence<kCount>{});
        if (status.ok()) status = RunOnCuda<T>(stream, attrs, x, y, tables);
        return FfiError(status);
      });
    });
  }
  static ffi::Error StaticCuda(GpuStream stream, ffi::AnyBuffer x, ffi::RemainingRets y,
                               ffi::Dictionary attrs) {
    return Guarded([&] {
      return ForDataType<Op>(x.element_type(), Op::kNames.data, [&](auto zero) {
        using T = decltype(zero);
        Converted<T> converted;
        Tables<T> tables;
        Status status =
            AttrTables<T>(attrs, &converted, &tables, std::make_index_sequence<kCount>{});
        if (status.ok()) status = RunOnCuda<T>(stream, attrs, x, y, tables);
        return FfiError(status);
      });
    });
  }
#endif

  // The array forms' signatures as the FFI binds them: x, then one buffer per table.
  template <class Indices>
  struct Signature;
  template <std::size_t... I>
  struct Signature<std::index_sequence<I...>> {
    template <std::size_t>
    using Buffer = ffi::AnyBuffer;
    static ffi::Error Host(ffi::AnyBuffer x, Buffer<I>... tables, ffi::RemainingRets y,
                           ffi::Dictionary attrs) {
      return TableHandlers::Host(x, Buffers{&tables...}, y, attrs);
    }
#if CONSTMEM_WITH_GPU
    static ffi::Error Cuda(GpuStream stream, ffi::AnyBuffer x, Buffer<I>... tables,
                           ffi::RemainingRets y, ffi::Dictionary attrs) {
      return TableHandlers::Cuda(stream, x, Buffers{&tables...}, y, attrs);
    }
#endif
  };
  using Array = Signature<std::make_index_sequence<kCount>>;

  // `binding` with N more buffer arguments.
  template <int N, class Binding>
  static auto TableArgs(Binding&& binding) {
    if constexpr (N == 1) {
      return std::move(binding).template Arg<ffi::AnyBuffer>();
    } else {
      return TableArgs<N - 1>(std::move(binding).template Arg<ffi::AnyBuffer>());
    }
  }

  // The handlers as XLA calls them: the array forms take (x, table_0, ..., table_{N-1}), the
  // static forms x alone; each gives the op's results (counted and checked by Prepare, whatever
  // a direct caller gives) and takes the op's attributes by name.
  static XLA_FFI_Error* HostHandler(XLA_FFI_CallFrame* frame) {
    static auto* handler = TableArgs<kCount>(ffi::Ffi::Bind().Arg<ffi::AnyBuffer>())
                               .RemainingRets()
                               .template Attrs<ffi::Dictionary>()
                               .To(Array::Host)
                               .release();
    return handler->Call(frame);
  }
  static XLA_FFI_Error* StaticHostHandler(XLA_FFI_CallFrame* frame) {
    static auto* handler = ffi::Ffi::Bind()
                               .Arg<ffi::AnyBuffer>()
                               .RemainingRets()
                               .Attrs<ffi::Dictionary>()
                               .To(StaticHost)
                               .release();
    return handler->Call(frame);
  }
#if CONSTMEM_WITH_GPU
  static XLA_FFI_Error* CudaHandler(XLA_FFI_CallFrame* frame) {
    static auto* handler =
        TableArgs<kCount>(
            ffi::Ffi::Bind().Ctx<ffi::PlatformStream<GpuStream>>().Arg<ffi::AnyBuffer>())
            .RemainingRets()
            .template Attrs<ffi::Dictionary>()
            .To(Array::Cuda, {ffi::Traits::kCmdBufferCompatible})
            .release();
    return handler->Call(frame);
  }
  static XLA_FFI_Error* StaticCudaHandler(XLA_FFI_CallFrame* frame) {
    static auto* handler = ffi::Ffi::Bind()
                               .Ctx<ffi::PlatformStream<GpuStream>>()
                               .Arg<ffi::AnyBuffer>()
                               .RemainingRets()
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

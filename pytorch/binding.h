// SPDX-License-Identifier: Apache-2.0
// An op's PyTorch kernels, made from its description (constmem/op_description.hpp): checks with
// clear errors, the table as a launcher takes it, the current CUDA stream, the CPU kernel sharded
// over PyTorch's intra-op threads. Only PyTorch's stable ABI (torch/csrc/stable): one build serves
// several torch releases.
//
//   CONSTMEM_TORCH_KERNELS(my, my::ScaleOp)   // my::scale and my::scale_static
//
// registers the kernels of a tensor table (`name`) and of a static one (`name_static`, a list in
// the schema) for CPU and CUDA tensors. An op with several tables takes each as an argument of its
// own, in the order it declares them, each checked under its own name: (data, weight, bias,
// attrs...). An op with several outputs returns them together (the schema's tuple, in the order
// it declares them). The schemas, fake kernels and autograd are the Python package's
// (constmem.torch.register_ops makes them from the library's op registry): load the library after
// defining them.
#pragma once

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "constmem/op_description.hpp"
#include "constmem/status.hpp"
#include "constmem/table.hpp"

// PyTorch's stable types are hidden in every library that uses them, so the kernels made from them
// are too.
#pragma GCC visibility push(hidden)
namespace constmem {
namespace torch_binding {

using Tensor = torch::stable::Tensor;
using ScalarType = torch::headeronly::ScalarType;

// PyTorch turns std::invalid_argument into a Python ValueError and std::runtime_error into a
// RuntimeError, each carrying the message: bad input is the caller's ValueError, anything else
// (out of memory, a CUDA failure) a RuntimeError.
[[noreturn]] inline void Fail(const std::string& message) { throw std::invalid_argument(message); }

inline void ThrowIfError(const Status& status) {
  if (status.ok()) return;
  if (status.code() == StatusCode::kInvalidArgument) Fail(status.message());
  throw std::runtime_error(status.ToString());
}

// PyTorch's dtype code of a DataType.
inline std::int32_t AotiDtypeOf(DataType type) {
  switch (type) {
    case DataType::kFloat64:
      return aoti_torch_dtype_float64();
    case DataType::kFloat16:
      return aoti_torch_dtype_float16();
    case DataType::kBFloat16:
      return aoti_torch_dtype_bfloat16();
    case DataType::kUint8:
      return aoti_torch_dtype_uint8();
    case DataType::kInt8:
      return aoti_torch_dtype_int8();
    case DataType::kInt32:
      return aoti_torch_dtype_int32();
    default:
      return aoti_torch_dtype_float32();
  }
}

// A new contiguous tensor of `dims` with like's device and dtype (or `dtype`), straight from the
// allocator: a dispatcher call (empty_like) costs more than the rest of a small call.
inline Tensor EmptyLike(const Tensor& like, const Dims& dims,
                        std::optional<DataType> dtype = std::nullopt) {
  std::vector<std::int64_t> strides(dims.size());
  std::int64_t stride = 1;
  for (std::size_t d = dims.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= std::max<std::int64_t>(dims[d], 1);
  }
  std::int32_t code = 0;
  std::int32_t device_type = 0;
  if (dtype) {
    code = AotiDtypeOf(*dtype);
  } else {
    TORCH_ERROR_CODE_CHECK(aoti_torch_get_dtype(like.get(), &code));
  }
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_type(like.get(), &device_type));
  AtenTensorHandle handle = nullptr;
  TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(static_cast<std::int64_t>(dims.size()),
                                                  dims.data(), strides.data(), code, device_type,
                                                  like.get_device_index(), &handle));
  return Tensor(handle);
}

// A tensor's device as the messages name it: "cpu", "cuda:0", or another device.
inline std::string DeviceName(const Tensor& tensor) {
  if (tensor.is_cpu()) return "cpu";
  if (tensor.is_cuda()) return "cuda:" + std::to_string(tensor.get_device_index());
  return "another device";
}

// The tensor itself when it is contiguous (no dispatcher call), else a contiguous copy.
inline Tensor Contiguous(const Tensor& tensor) {
  return tensor.is_contiguous() ? tensor : torch::stable::contiguous(tensor);
}

template <class T>
constexpr ScalarType ScalarTypeOf();
template <>
constexpr ScalarType ScalarTypeOf<float>() {
  return ScalarType::Float;
}
template <>
constexpr ScalarType ScalarTypeOf<double>() {
  return ScalarType::Double;
}
template <>
constexpr ScalarType ScalarTypeOf<std::int32_t>() {
  return ScalarType::Int;
}
template <>
constexpr ScalarType ScalarTypeOf<std::uint8_t>() {
  return ScalarType::Byte;
}
template <>
constexpr ScalarType ScalarTypeOf<std::int8_t>() {
  return ScalarType::Char;
}
template <>
constexpr ScalarType ScalarTypeOf<Float16>() {
  return ScalarType::Half;
}
template <>
constexpr ScalarType ScalarTypeOf<BFloat16>() {
  return ScalarType::BFloat16;
}

// The DataType of a tensor's dtype, or nothing for one no op takes.
inline std::optional<DataType> DataTypeOfScalar(ScalarType type) {
  switch (type) {
    case ScalarType::Float:
      return DataType::kFloat32;
    case ScalarType::Double:
      return DataType::kFloat64;
    case ScalarType::Half:
      return DataType::kFloat16;
    case ScalarType::BFloat16:
      return DataType::kBFloat16;
    case ScalarType::Byte:
      return DataType::kUint8;
    case ScalarType::Char:
      return DataType::kInt8;
    case ScalarType::Int:
      return DataType::kInt32;
    default:
      return std::nullopt;
  }
}

inline const char* DtypeName(ScalarType type) {
  switch (type) {
    case ScalarType::Float:
      return "float32";
    case ScalarType::Double:
      return "float64";
    case ScalarType::Int:
      return "int32";
    case ScalarType::Long:
      return "int64";
    case ScalarType::Byte:
      return "uint8";
    case ScalarType::Half:
      return "float16";
    case ScalarType::BFloat16:
      return "bfloat16";
    case ScalarType::Short:
      return "int16";
    case ScalarType::Char:
      return "int8";
    case ScalarType::Bool:
      return "bool";
    case ScalarType::ComplexFloat:
      return "complex64";
    case ScalarType::ComplexDouble:
      return "complex128";
    default:
      return "another dtype";
  }
}

// Runs fn(zero) with zero of the data's element type among those Op takes (kDataTypes), else an
// error naming the argument and listing them.
template <class Op, class Fn>
decltype(auto) ForData(const Tensor& data, const char* name, Fn&& fn) {
  const std::optional<DataType> type = DataTypeOfScalar(data.scalar_type());
  if (type && TakesDataType<Op>(*type)) return VisitDataType<Op>(*type, std::forward<Fn>(fn));
  Fail(std::string(name) + " must be " + DataTypeList<Op>() + "; got " +
       DtypeName(data.scalar_type()));
}

// Op's table I as Op takes it: a vector of T within that table's limits, contiguous, on the data's
// device or on the CPU (the rules every framework applies, in the same words, naming the table).
template <class Op, int I, class T>
Tensor CheckedTable(const Tensor& table, const Tensor& data) {
  constexpr TableSpec spec = TableSpecOf<Op>(I);
  const char* name = spec.name;
  if (table.dim() != 1) {
    // The shape as Python's tuples print it, in the fake kernel's words.
    std::string shape = "(";
    for (std::int64_t d : table.sizes())
      shape += (shape.size() > 1 ? ", " : "") + std::to_string(d);
    shape += ")";
    Fail(std::string(name) + " must be a vector (rank 1); got shape " + shape);
  }
  ThrowIfError(CheckTableSize(spec, table.numel()));
  if (table.scalar_type() != ScalarTypeOf<T>()) {
    Fail(std::string(name) + " must be " + DtypeName(ScalarTypeOf<T>()) + "; got " +
         DtypeName(table.scalar_type()));
  }
  const bool same_device =
      table.is_cuda() && data.is_cuda() && table.get_device_index() == data.get_device_index();
  if (!table.is_cpu() && !same_device) {
    Fail(std::string(name) + " must be on the CPU or on " + Op::kNames.data + "'s device (" +
         DeviceName(data) + "); got a tensor on " + DeviceName(table));
  }
  return Contiguous(table);
}

// The table as a launcher takes it. A CPU table counts as pageable whether or not it is pinned:
// the core then copies it into its own staging before the call returns, so the caller may free
// or reuse it at once.
template <class T>
TableView<T> ViewOf(const Tensor& table) {
  return {table.const_data_ptr<T>(), table.numel(),
          table.is_cpu() ? SourceKind::kPageableHost : SourceKind::kDevice};
}

// A table given as a static value (a schema list): the same values come again on every call, so
// the core compares them with what a bank slot holds and skips the copy.
template <class T>
TableView<T> StaticView(const std::vector<T>& values) {
  return {values.data(), static_cast<std::int64_t>(values.size()), SourceKind::kPageableHost,
          /*repeats=*/true};
}

// Op's table I given as a list, checked and converted to its entries.
template <class Op, int I, class T, class Source>
std::vector<T> StaticTable(const std::vector<Source>& values) {
  constexpr TableSpec spec = TableSpecOf<Op>(I);
  ThrowIfError(CheckTableSize(spec, static_cast<std::int64_t>(values.size())));
  // Floating-point values round to nearest (float64 lists for float32 data, infinity past
  // float32's range); integers must fit.
  std::vector<T> converted(values.size());
  if constexpr (std::is_floating_point_v<T>) {
    std::transform(values.begin(), values.end(), converted.begin(), RoundFromFloat64<T>);
  } else {
    std::transform(values.begin(), values.end(), converted.begin(),
                   [](Source value) { return static_cast<T>(value); });
  }
  if constexpr (std::is_integral_v<T>) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (static_cast<Source>(converted[i]) != values[i]) {
        Fail(std::string(spec.name) + "[" + std::to_string(i) + "] = " + std::to_string(values[i]) +
             " does not fit int32");
      }
    }
  }
  return converted;
}

#if CONSTMEM_WITH_GPU
// PyTorch's current stream on the tensor's device: never the legacy default stream.
inline GpuStream CurrentStream(const Tensor& tensor) {
  void* stream = nullptr;
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_current_cuda_stream(tensor.get_device_index(), &stream));
  return static_cast<GpuStream>(stream);
}
#endif

// fn(begin, end) over [0, count) on PyTorch's intra-op threads, in ranges of about `grain`.
template <class Fn>
void ShardOnCpuThreads(std::int64_t count, std::int64_t cost_per_element, const Fn& fn) {
  // About 32 K operations a range amortise a task's start.
  const std::int64_t grain =
      std::max<std::int64_t>(1, 32768 / std::max<std::int64_t>(1, cost_per_element));
  torch::stable::parallel_for(0, count, grain, fn);
}

// fn(begin, end) over [0, count), sharded as ShardOnCpuThreads: the Shard an op's RunCpu takes.
struct CpuThreads {
  template <class Fn>
  void operator()(std::int64_t count, std::int64_t cost_per_element, const Fn& fn) const {
    ShardOnCpuThreads(count, cost_per_element, fn);
  }
};

// The data as Op takes it: not on the meta device (a kernel of real tensors runs only on CPU and
// CUDA ones; the fake kernel answers for meta tensors).
template <class Op>
void CheckDataDevice(const Tensor& data) {
  if (!data.is_cpu() && !data.is_cuda()) {
    Fail(std::string(Op::kNames.data) + " must be a CPU or CUDA tensor");
  }
}

// "17.6 TB": a size in bytes as messages give it.
inline std::string BytesString(double bytes) {
  static constexpr const char* kUnits[] = {"bytes", "kB", "MB", "GB", "TB", "PB", "EB"};
  int unit = 0;
  for (; bytes >= 1000 && unit + 1 < 7; ++unit) bytes /= 1000;
  char text[32];
  std::snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return text;
}

// A CPU tensor of `dims` of `type` larger than the machine's memory is refused with its size
// before the allocator is asked: its failure would be a RuntimeError with a C++ stack trace on
// stderr.
inline void CheckFitsInMemory(const std::string& name, const Dims& dims, DataType type) {
  const double bytes = static_cast<double>(ElementCount(dims)) * DataTypeSize(type);
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return;
  const double memory = static_cast<double>(pages) * static_cast<double>(page_size);
  if (bytes <= memory) return;
  Fail(name + " of shape " + DimsString(dims) + " would need " + BytesString(bytes) + " (" +
       DataTypeName(type) + "), more than this machine's memory (" + BytesString(memory) + ")");
}

// Op's outputs (y, or each of several in order) = Op(x, tables) for data of type T, each table
// viewed as the launcher takes it.
template <class Op, class T>
std::vector<Tensor> RunTableOp(const Tensor& x_in, const Tables<T>& tables,
                               const AttrValue* values) {
  constexpr int kOutputs = OutputCountOf<Op>();
  typename Op::Params params;
  ThrowIfError(ReadParams<Op>(values, DataTypeOf<T>(), &params));
  const auto sizes = x_in.sizes();
  const Dims x_dims(sizes.begin(), sizes.end());
  typename Op::Shape shape;
  OutputDims y_dims;
  ThrowIfError(OutputOf<Op>(x_dims, params, tables.Sizes(), &shape, y_dims.data()));
  std::array<DataType, kOutputs> dtypes;
  for (int i = 0; i < kOutputs; ++i) {
    dtypes[i] = OutputDataTypeOf<Op>(i, DataTypeOf<T>(), values);
  }
  if (x_in.is_cpu()) {
    // An expanded x (stride 0) may stand for more elements than memory holds.
    if (!x_in.is_contiguous()) {
      CheckFitsInMemory(std::string(Op::kNames.data) + "'s contiguous copy", x_dims,
                        DataTypeOf<T>());
    }
    for (int i = 0; i < kOutputs; ++i) CheckFitsInMemory(OutputName<Op>(i), y_dims[i], dtypes[i]);
  }
  const Tensor x = Contiguous(x_in);
  std::vector<Tensor> y;
  y.reserve(kOutputs);
  Outputs outputs;
  for (int i = 0; i < kOutputs; ++i) {
    y.push_back(EmptyLike(x, y_dims[i], dtypes[i]));
    outputs.Set(i, y[i].mutable_data_ptr(), dtypes[i]);
  }
  const T* in = static_cast<const T*>(x.const_data_ptr());
  if (x.is_cpu()) {
    RunCpuOf<Op, T>(params, shape, in, outputs, tables, CpuThreads{});
    return y;
  }
#if CONSTMEM_WITH_GPU
  ThrowIfError(LaunchOf<Op, T>(CurrentStream(x), params, shape, in, outputs, tables));
#else
  Fail("constmem was built without GPU kernels");
#endif
  return y;
}

// What keeps table I of a call alive while the kernel runs: its tensor (or a contiguous copy), or
// a list's converted values.
template <class Op, class T, bool kStatic, std::size_t I>
using HeldTable =
    std::conditional_t<kStatic, std::vector<TableEntryOf<Op, T, I>>, std::optional<Tensor>>;

// Table I's argument as the schema gives it: a tensor, or a list (int[] for an int32 table, else
// float[]) where kStatic.
template <class Op, bool kStatic, std::size_t I>
using TableInput = std::conditional_t<
    kStatic, std::vector<std::conditional_t<TableSpecOf<Op>(I).int32, std::int64_t, double>>,
    Tensor>;
template <class Op, bool kStatic, class Indices>
struct TableInputs;
template <class Op, bool kStatic, std::size_t... I>
struct TableInputs<Op, kStatic, std::index_sequence<I...>> {
  using Type = std::tuple<TableInput<Op, kStatic, I>...>;
  // Every table argument taken off the stack, before anything is checked: the kernel owns its
  // inputs, and one left on the stack when a check throws would never be freed.
  static Type Take(StableIValue* stack) {
    return Type{torch::stable::detail::to<TableInput<Op, kStatic, I>>(stack[1 + I])...};
  }
};
template <class Op, bool kStatic>
using TableInputsOf = TableInputs<Op, kStatic, std::make_index_sequence<TableCountOf<Op>()>>;

// Table I of the call from its argument `value`, checked under its own name, into `tables`.
template <class Op, class T, bool kStatic, std::size_t I>
void ReadTable(const TableInput<Op, kStatic, I>& value, const Tensor& x,
               HeldTable<Op, T, kStatic, I>* held, Tables<T>* tables) {
  using Entry = TableEntryOf<Op, T, I>;
  if constexpr (kStatic) {
    *held = StaticTable<Op, I, Entry>(value);
    tables->Set(I, StaticView(*held));
  } else {
    held->emplace(CheckedTable<Op, I, Entry>(value, x));
    tables->Set(I, ViewOf<Entry>(**held));
  }
}

// Op's outputs = Op(x, tables) with the tables from their arguments, in Op's order.
template <class Op, class T, bool kStatic, std::size_t... I>
std::vector<Tensor> RunWithTables(const Tensor& x,
                                  const typename TableInputsOf<Op, kStatic>::Type& inputs,
                                  const AttrValue* values, std::index_sequence<I...>) {
  std::tuple<HeldTable<Op, T, kStatic, I>...> held;
  Tables<T> tables;
  // In order: the first table refused is the one named.
  (ReadTable<Op, T, kStatic, I>(std::get<I>(inputs), x, &std::get<I>(held), &tables), ...);
  return RunTableOp<Op, T>(x, tables, values);
}

// Op's attributes from the schema's arguments stack[first ...], by kind.
template <class Op>
void UnboxAttrs(StableIValue* stack, int first, AttrValue* values, std::string* storage) {
  for (int i = 0; i < Op::kAttrCount; ++i) {
    StableIValue value = stack[first + i];
    switch (Op::kAttrs[i].kind) {
      case AttrKind::kChoice:
      case AttrKind::kDataType:
        storage[i] = torch::stable::detail::to<std::string>(value);
        values[i].choice = storage[i];
        break;
      case AttrKind::kFloat64:
        values[i].float64 = torch::stable::detail::to<double>(value);
        break;
      case AttrKind::kInt64:
        values[i].int64 = torch::stable::detail::to<std::int64_t>(value);
        break;
    }
  }
}

// The boxed kernel of `name` (tensor tables) or `name_static` (lists): (data, each table in Op's
// order, attrs...) -> y, or each of several outputs in order (the schema's tuple).
template <class Op, bool kStatic>
void TableKernel(StableIValue* stack, std::uint64_t /*num_args*/, std::uint64_t num_outputs) {
  constexpr int kTables = TableCountOf<Op>();
  const Tensor x = torch::stable::detail::to<Tensor>(stack[0]);
  const auto inputs = TableInputsOf<Op, kStatic>::Take(stack);
  std::array<AttrValue, Op::kAttrCount + 1> values{};
  std::array<std::string, Op::kAttrCount + 1> storage{};
  UnboxAttrs<Op>(stack, 1 + kTables, values.data(), storage.data());
  CheckDataDevice<Op>(x);
  // A schema other than the one the Python package defines (each output a Tensor) is refused
  // before anything runs: the outputs go onto the stack's first num_outputs entries.
  if (num_outputs != static_cast<std::uint64_t>(OutputCountOf<Op>())) {
    Fail(std::string(Op::kNames.name) + "'s schema must give " +
         std::to_string(OutputCountOf<Op>()) + " outputs; got " + std::to_string(num_outputs));
  }
  const std::vector<Tensor> y = ForData<Op>(x, Op::kNames.data, [&](auto zero) {
    using T = decltype(zero);
    return RunWithTables<Op, T, kStatic>(x, inputs, values.data(),
                                         std::make_index_sequence<kTables>{});
  });
  for (std::size_t i = 0; i < y.size(); ++i) stack[i] = torch::stable::detail::from(y[i]);
}

// Registers both kernels of each op in `library`'s CompositeExplicitAutograd (CPU and CUDA).
template <class... Ops>
void RegisterTableKernels(torch::stable::detail::StableLibrary& library) {
  auto one = [&](auto* op) {
    using Op = std::remove_pointer_t<decltype(op)>;
    static const std::string name = Op::kNames.name;
    static const std::string static_name = name + "_static";
    library.impl(name.c_str(), &TableKernel<Op, false>);
    library.impl(static_name.c_str(), &TableKernel<Op, true>);
  };
  (one(static_cast<Ops*>(nullptr)), ...);
}

}  // namespace torch_binding
}  // namespace constmem
#pragma GCC visibility pop

// The kernels of the ops `...` (OpDescriptions) in the torch library `ns`.
#define CONSTMEM_TORCH_KERNELS(ns, ...)                              \
  STABLE_TORCH_LIBRARY_IMPL(ns, CompositeExplicitAutograd, m) {      \
    ::constmem::torch_binding::RegisterTableKernels<__VA_ARGS__>(m); \
  }

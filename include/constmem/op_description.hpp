// SPDX-License-Identifier: Apache-2.0
// An op with one table or several, described once, in no framework's terms. The bindings make
// everything else from the description: TensorFlow's op definitions, kernels and XLA lowering
// (tf/adapter/table_op.h), PyTorch's kernels (pytorch/binding.h), the XLA FFI handlers JAX calls
// (xla_ffi/ffi_support.h), and the registry each op library exports, from which the Python
// packages make schemas, wrappers and limits.
//
//   struct ScaleOp : constmem::OpDescription {  // y = x * (g[0] + ... + g[n-1]), elementwise
//     static constexpr constmem::OpNames kNames{"my", "Scale", "scale", "x", "gains"};
//     static constexpr constmem::TableRule kTable{1, 1024};
//     template <class T, class Shard>  // the CPU kernel: shard(count, cost, fn(begin, end))
//     static void RunCpu(const Params&, const Shape& shape, const T* x, T* y, const T* gains,
//                        std::int64_t size, const Shard& shard);
//     template <class T>  // the op's CUDA launcher (nvcc code, declared in a plain header)
//     static Status Launch(GpuStream stream, const Params&, const Shape& shape, const T* x, T* y,
//                          const TableView<T>& gains);
//     template <class T>
//     static Placement Place(std::int64_t size, SourceKind source);
//   };
//
// Place may also take the launch's output elements, `Place<T>(size, source, launch_elements)`,
// where the launcher passes them to ChoosePlacement (strategy.hpp): placement_of() then answers
// for a launch of that size.
//
// An op with several tables (weight and bias, row and column taps) declares them in kTables, each
// with its own name, sizes and entries, and takes them together (Tables<T> below):
//
//   static constexpr constmem::TableSpec kTables[] = {{"weight", 1, 1 << 20}, {"bias", 1, 4096}};
//   static constexpr int kTableCount = 2;
//   static Status Output(const Dims& x, const Params&, const TableSizes& sizes, Shape*, Dims* y);
//   RunCpu(const Params&, const Shape&, const T* x, T* y, const Tables<T>& tables, const Shard&);
//   Launch(GpuStream, const Params&, const Shape&, const T* x, T* y, const Tables<T>& tables);
//   Place<T>(int table, std::int64_t size, SourceKind source);
//
// Every framework then takes each table in any of its forms (a tensor on the host or the data's
// device, or a static list), checks it under its own name, and gives a gradient to each.
//
// The defaults below make an elementwise op on float32 and float64 data whose table has the
// data's type and which has no attribute; an op declares what differs. kDataTypes lists the data
// types it takes (numeric.hpp); RunCpu, Launch and Place are instantiated with T each of their C++
// types, and take tables of ComputeTypeOf<T> entries (float32 for float16, bfloat16, uint8 and
// int8 data, float64 for int32). Kernels read data with ToCompute and write it with FromCompute.
#pragma once

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "constmem/cpu_float_mode.hpp"
#include "constmem/numeric.hpp"
#include "constmem/stats.hpp"
#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/table.hpp"

namespace constmem {

// An op's names: `library` and `type` make TensorFlow's "Library>Type" (its forms add "HostTable"
// and "Attr"); `library` and `name` make PyTorch's "library::name" and the XLA FFI targets
// "library_name" (their static-table forms add "_static"). `data` and `table` name the two inputs
// in every framework and in every error message.
struct OpNames {
  const char* library;
  const char* type;
  const char* name;
  const char* data;
  const char* table;
};

// What the table holds and how many entries it takes.
struct TableRule {
  std::int64_t min_size;
  std::int64_t max_size;
  // int32 entries whatever the data's type, else entries of the data's type (the one documented
  // rule in every framework: a tensor table must have that dtype exactly).
  bool int32 = false;
};

// One of the tables of an op that declares several (OpDescription::kTables): its name in every
// framework and message, how many entries it takes, and whether they are int32 (else the data's
// compute type).
struct TableSpec {
  const char* name;
  std::int64_t min_size;
  std::int64_t max_size;
  bool int32 = false;
};

// The most tables an op may declare.
constexpr int kMaxTables = 8;

// The sizes of a call's tables, in the order the op declares them (kUnknownDim while TensorFlow
// infers shapes from a table whose size it does not know yet).
struct TableSizes {
  std::int64_t size[kMaxTables] = {};
  int count = 0;
  std::int64_t operator[](int i) const { return size[i]; }
};

// An attribute beyond the table. Every framework passes its value by kind: a choice among names
// (a string), a float64 (TensorFlow keeps its IEEE-754 bits in an int attr, which keeps it exact),
// an int64, or a dtype among names (a string; TensorFlow's type attr), which picks the output's
// dtype (OutputDType).
enum class AttrKind { kChoice, kFloat64, kInt64, kDataType };
struct AttrSpec {
  const char* name;
  AttrKind kind;
  const char* choices = "";  // a kChoice's or kDataType's names, comma-separated ("SAME,VALID",
                             // "bfloat16,float16,float32"); the first is the default
};

// How the output's dtype is decided: the data's (the default), a fixed one, or the one an
// attribute of kind kDataType names. `types` lists those it may be (a fixed one's alone): the
// kernels are instantiated with each.
enum class OutputRule { kData, kFixed, kAttr };
struct OutputDType {
  OutputRule rule = OutputRule::kData;
  DataTypeSet types = {};
  int attr = -1;  // kAttr: the attribute's index in kAttrs
};

// One of the outputs of an op that declares several (OpDescription::kOutputs): its name in every
// framework and message, and the rule of its dtype.
struct OutputSpec {
  const char* name;
  OutputDType dtype;
};

// The most outputs an op may declare.
constexpr int kMaxOutputs = 8;

// A call's outputs, as RunCpu and Launch of an op with several outputs receive them, each
// contiguous, in the order the op declares them: y.As<Out>(i) is output i's elements, Out the C++
// type of its dtype for this call (y.dtype(i): the data's type T, the fixed one, or the one its
// attribute names, which VisitOutputType<Op, i> visits). One instantiation per data type, whatever
// the outputs' types. On the CPU every output is in host memory, on the GPU in device memory.
class Outputs {
 public:
  template <class Out>
  Out* As(int i) const {
    return static_cast<Out*>(data_[i]);
  }
  void* data(int i) const { return data_[i]; }
  DataType dtype(int i) const { return dtype_[i]; }
  int count() const { return count_; }

  // For the bindings: output i's buffer, of `dtype`.
  void Set(int i, void* data, DataType dtype) {
    data_[i] = data;
    dtype_[i] = dtype;
    count_ = count_ > i + 1 ? count_ : i + 1;
  }

 private:
  void* data_[kMaxOutputs] = {};
  DataType dtype_[kMaxOutputs] = {};
  int count_ = 0;
};

// A call's tables, as RunCpu and Launch of an op with several tables receive them: tables[i] is
// table i's TableView (entries of the data's compute type), tables.int32(i) that of an int32
// table. On the CPU every table is in host memory.
template <class T>
class Tables {
 public:
  TableView<ComputeTypeOf<T>> operator[](int i) const { return View<ComputeTypeOf<T>>(i); }
  TableView<std::int32_t> int32(int i) const { return View<std::int32_t>(i); }
  int count() const { return count_; }

  // For the bindings: table i's view with entries of E (as the op's TableSpec says).
  template <class E>
  TableView<E> View(int i) const {
    const TableView<void>& t = tables_[i];
    return {static_cast<const E*>(t.values), t.size, t.source, t.repeats};
  }
  template <class E>
  void Set(int i, const TableView<E>& table) {
    tables_[i] = {table.values, table.size, table.source, table.repeats};
    count_ = count_ > i + 1 ? count_ : i + 1;
  }
  TableSizes Sizes() const {
    TableSizes sizes;
    for (int i = 0; i < count_; ++i) sizes.size[i] = tables_[i].size;
    sizes.count = count_;
    return sizes;
  }

 private:
  TableView<void> tables_[kMaxTables];
  int count_ = 0;
};

// One attribute's value, as a binding read it (only the field of its kind is set).
struct AttrValue {
  std::string_view choice;
  double float64 = 0;
  std::int64_t int64 = 0;
};

// A shape's dimensions. While TensorFlow infers shapes a dimension may be unknown: kUnknownDim.
using Dims = std::vector<std::int64_t>;
constexpr std::int64_t kUnknownDim = -1;

// The product of dims: kUnknownDim if one of them is unknown, else 0 if one is 0, else the product,
// or INT64_MAX where it would overflow (more than any op takes: OutputOf refuses such a shape).
inline std::int64_t ElementCount(const Dims& dims) {
  std::int64_t count = 1;
  bool zero = false;
  bool overflow = false;
  for (std::int64_t d : dims) {
    if (d < 0) return kUnknownDim;
    zero = zero || d == 0;
    overflow = overflow || __builtin_mul_overflow(count, d, &count);
  }
  return zero ? 0 : overflow ? INT64_MAX : count;
}

// The product of every dimension but the last (the rows of an op that works along the last
// axis), as ElementCount counts it. `dims` has rank 1 or more.
inline std::int64_t RowCount(const Dims& dims) {
  return dims.empty() ? 1 : ElementCount(Dims(dims.begin(), dims.end() - 1));
}

// dims as every message shows a shape: "[2, 3]", "?" for an unknown dimension.
inline std::string DimsString(const Dims& dims) {
  std::string text = "[";
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (d > 0) text += ", ";
    text += dims[d] < 0 ? std::string("?") : std::to_string(dims[d]);
  }
  return text + "]";
}

// Refuses dims whose known dimensions other than 0 multiply to more than `max_elements`, naming
// `name` and the shape. Zeros are left out: an empty tensor's other dimensions still index the
// kernels (rows, planes, strides), and their products must not overflow either.
inline Status CheckElementCount(const Dims& dims, const char* name, std::int64_t max_elements) {
  std::int64_t count = 1;
  bool over = false;
  for (std::int64_t d : dims) {
    if (d <= 0) continue;
    over = over || __builtin_mul_overflow(count, d, &count) || count > max_elements;
  }
  if (!over) return Status::Ok();
  return InvalidArgument(std::string(name) + " of shape " + DimsString(dims) +
                         " is larger than the kernels can address (at most " +
                         std::to_string(max_elements) + " elements)");
}

// The defaults of an op's description.
struct OpDescription {
  // RunCpu takes the table converted to the data's type (an op that adds int32 entries in the
  // data's type, as Frobulate); else as it is.
  static constexpr bool kCpuTableInDataType = false;
  // The data types the op takes, and so the C++ types T its kernels are instantiated with.
  static constexpr DataTypeSet kDataTypes{DataType::kFloat32, DataType::kFloat64};
  // The output's dtype: the data's. Another rule (a fixed dtype, or one an attribute names) makes
  // RunCpu and Launch templates of <T, Out> that write Out* y, Out each of the rule's types.
  static constexpr OutputDType kOutputDType{};
  // y[i] depends on x[i] alone: y may take x's buffer, and XLA may pass any dimension dynamic.
  // Otherwise the last axis is one unit (a row), as for a filter.
  static constexpr bool kElementwise = true;
  // The most elements the data may have.
  static constexpr std::int64_t kMaxElements = std::int64_t{1} << 62;
  static constexpr const char* kDoc = "";
  // The attributes, in the order the bindings pass them (an array of AttrSpec; none here).
  static constexpr AttrSpec* kAttrs = nullptr;
  static constexpr int kAttrCount = 0;
  // Several tables, in the order every framework takes them (an array of TableSpec); none here:
  // the op's one table is then kNames.table, with kTable's rule.
  static constexpr TableSpec* kTables = nullptr;
  static constexpr int kTableCount = 0;
  // Several outputs, in the order every framework gives them (an array of OutputSpec, each with
  // its own dtype rule); none here: the op's one output `y`, of kOutputDType's rule. An op with
  // several outputs has its Output give each one's dims (y[i]), and RunCpu and Launch take them
  // together (Outputs): RunCpu<T>(params, shape, x, const Outputs& y, tables..., shard).
  static constexpr OutputSpec* kOutputs = nullptr;
  static constexpr int kOutputCount = 0;

  // What the kernels read from the attributes (`values[i]` is kAttrs[i]'s), checked for data of
  // `dtype`.
  struct Params {
    Status Read(const AttrValue* /*values*/, DataType /*dtype*/) { return Status::Ok(); }
  };
  // What the CPU kernel and the launcher need of the data's shape.
  struct Shape {
    std::int64_t elements = 0;
  };
  // y's dimensions and the launch's Shape from x's dimensions and the table's size, or an error
  // for what the op refuses (an op with several outputs: y[i], output i's, for each). While shapes
  // are inferred, dimensions and table_size may be kUnknownDim: y's are then kUnknownDim where they
  // depend on them, and `shape` is not used.
  template <class P, class S>
  static Status Output(const Dims& x, const P&, std::int64_t /*table_size*/, S* shape, Dims* y) {
    shape->elements = ElementCount(x);
    *y = x;
    return Status::Ok();
  }
  // The same for an op of several tables (kTables), whatever their sizes.
  template <class P, class S>
  static Status Output(const Dims& x, const P& params, const TableSizes& /*sizes*/, S* shape,
                       Dims* y) {
    return Output(x, params, std::int64_t{0}, shape, y);
  }
};

// Whether Op declares several tables (kTables) rather than one (kNames.table and kTable).
template <class Op>
constexpr bool kSeveralTables = Op::kTableCount > 0;

// How many tables Op takes.
template <class Op>
constexpr int TableCountOf() {
  if constexpr (kSeveralTables<Op>) {
    static_assert(Op::kTableCount <= kMaxTables, "an op takes at most kMaxTables tables");
    static_assert(!Op::kCpuTableInDataType, "kCpuTableInDataType is for an op with one table");
    return Op::kTableCount;
  } else {
    return 1;
  }
}

// Op's table i, as its description declares it: kTables[i], or its one table.
template <class Op>
constexpr TableSpec TableSpecOf(int i) {
  if constexpr (kSeveralTables<Op>) {
    return Op::kTables[i];
  } else {
    (void)i;
    return {Op::kNames.table, Op::kTable.min_size, Op::kTable.max_size, Op::kTable.int32};
  }
}

// The entries of Op's table I for data of type T (float for uint8 data), and those RunCpu takes.
template <class Op, class T, int I = 0>
using TableEntryOf = std::conditional_t<TableSpecOf<Op>(I).int32, std::int32_t, ComputeTypeOf<T>>;
template <class Op, class T>
using CpuTableEntryOf =
    std::conditional_t<Op::kCpuTableInDataType, ComputeTypeOf<T>, TableEntryOf<Op, T>>;

// Whether Op takes data of `type`, and of C++ type T.
template <class Op>
constexpr bool TakesDataType(DataType type) {
  return Op::kDataTypes.Has(type);
}
template <class Op, class T>
constexpr bool kTakes = TakesDataType<Op>(DataTypeOf<T>());

// Whether Op takes a data type after the I-th (in DataType's order).
template <class Op>
constexpr bool TakesDataTypeAfter(int i) {
  for (int j = i + 1; j < kDataTypeCount; ++j) {
    if (Op::kDataTypes.Has(static_cast<DataType>(j))) return true;
  }
  return false;
}

// fn(T{}) for the C++ type T of `type`, which Op takes (the caller checks TakesDataType first:
// every binding refuses another type with DataTypeList's words; the last type Op takes stands in
// for one it does not). Only the types Op takes are instantiated.
template <class Op, int I = 0, class Fn>
decltype(auto) VisitDataType(DataType type, Fn&& fn) {
  static_assert(TakesDataTypeAfter<Op>(-1), "an op takes at least one data type");
  constexpr auto kType = static_cast<DataType>(I);
  if constexpr (!TakesDataType<Op>(kType)) {
    return VisitDataType<Op, I + 1>(type, std::forward<Fn>(fn));
  } else if constexpr (!TakesDataTypeAfter<Op>(I)) {
    return fn(ElementTypeOf<kType>{});
  } else {
    if (type == kType) return fn(ElementTypeOf<kType>{});
    return VisitDataType<Op, I + 1>(type, std::forward<Fn>(fn));
  }
}

// fn(T{}) for the C++ type T of each data type Op takes, in DataType's order.
template <class Op, class Fn>
void ForEachDataTypeOf(Fn&& fn) {
  auto one = [&](auto zero) {
    if constexpr (kTakes<Op, decltype(zero)>) fn(zero);
  };
  one(float{});
  one(double{});
  one(Float16{});
  one(BFloat16{});
  one(std::uint8_t{});
  one(std::int8_t{});
  one(std::int32_t{});
}

// Whether Op declares several outputs (kOutputs) rather than one (y, of kOutputDType's rule).
template <class Op>
constexpr bool kSeveralOutputs = Op::kOutputCount > 0;

// How many outputs Op gives.
template <class Op>
constexpr int OutputCountOf() {
  if constexpr (kSeveralOutputs<Op>) {
    static_assert(Op::kOutputCount <= kMaxOutputs, "an op gives at most kMaxOutputs outputs");
    return Op::kOutputCount;
  } else {
    return 1;
  }
}

// Op's output i, as its description declares it: kOutputs[i], or its one output `y`.
template <class Op>
constexpr OutputSpec OutputSpecOf(int i) {
  if constexpr (kSeveralOutputs<Op>) {
    return Op::kOutputs[i];
  } else {
    (void)i;
    return {"y", Op::kOutputDType};
  }
}

// Whether Op's one output has the data's dtype (else kOutputDType's rule picks it).
template <class Op>
constexpr bool kOutputIsData = !kSeveralOutputs<Op> && Op::kOutputDType.rule == OutputRule::kData;

// The DataType named `name`, if any.
inline bool DataTypeFromName(std::string_view name, DataType* type) {
  for (int i = 0; i < kDataTypeCount; ++i) {
    if (name == DataTypeName(static_cast<DataType>(i))) {
      *type = static_cast<DataType>(i);
      return true;
    }
  }
  return false;
}

// The dtype `rule` gives for data of `data` and the attributes' values (checked by ReadParams).
inline DataType OutputDataType(const OutputDType& rule, DataType data, const AttrValue* values) {
  if (rule.rule == OutputRule::kFixed) {
    for (int i = 0; i < kDataTypeCount; ++i) {
      if (rule.types.Has(static_cast<DataType>(i))) return static_cast<DataType>(i);
    }
  } else if (rule.rule == OutputRule::kAttr) {
    DataType type = data;
    DataTypeFromName(values[rule.attr].choice, &type);
    return type;
  }
  return data;
}

// Op's output `i`'s dtype for data of `data` and the attributes' values (checked by ReadParams).
template <class Op>
DataType OutputDataTypeOf(int i, DataType data, const AttrValue* values) {
  return OutputDataType(OutputSpecOf<Op>(i).dtype, data, values);
}
// The same for Op's one output (or its first).
template <class Op>
DataType OutputDataTypeOf(DataType data, const AttrValue* values) {
  return OutputDataTypeOf<Op>(0, data, values);
}

// fn(Out{}) for the C++ type Out of `type`, one of the types the rule of Op's output I lists
// (checked by ReadParams; only those are instantiated): where an output's dtype is not the data's.
namespace detail {
template <class Op, int I>
struct OutputTypes {  // VisitDataType over output I's types
  static constexpr DataTypeSet kDataTypes = OutputSpecOf<Op>(I).dtype.types;
};
}  // namespace detail
template <class Op, int I = 0, class Fn>
decltype(auto) VisitOutputType(DataType type, Fn&& fn) {
  return VisitDataType<detail::OutputTypes<Op, I>>(type, std::forward<Fn>(fn));
}

// How messages name Op's output i: "scale's result" (its one output), "quantize's absmax".
template <class Op>
std::string OutputName(int i) {
  return std::string(Op::kNames.name) + "'s " +
         (kSeveralOutputs<Op> ? OutputSpecOf<Op>(i).name : "result");
}

// The names of the data types Op takes, in the order every message lists them.
template <class Op>
std::vector<const char*> DataTypeNames() {
  std::vector<const char*> names;
  for (int i = 0; i < kDataTypeCount; ++i) {
    if (Op::kDataTypes.Has(static_cast<DataType>(i))) {
      names.push_back(DataTypeName(static_cast<DataType>(i)));
    }
  }
  return names;
}

// "float32 or float64" (or "float32, float64 or uint8"): the data types Op takes, as every
// binding's error words them.
template <class Op>
std::string DataTypeList() {
  const std::vector<const char*> names = DataTypeNames<Op>();
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) list += i + 1 == names.size() ? " or " : ", ";
    list += names[i];
  }
  return list;
}

// "N to M entries" (or "exactly N entries") as every binding words a table's size.
inline std::string TableSizeRule(const TableSpec& table) {
  if (table.min_size == table.max_size) {
    return "exactly " + std::to_string(table.min_size) +
           (table.min_size == 1 ? " entry" : " entries");
  }
  return std::to_string(table.min_size) + " to " + std::to_string(table.max_size) + " entries";
}

// The error for a table of the wrong size, worded alike in every framework.
inline Status CheckTableSize(const TableSpec& table, std::int64_t size) {
  if (size >= table.min_size && size <= table.max_size) return Status::Ok();
  return InvalidArgument(std::string(table.name) + " must have " + TableSizeRule(table) + "; got " +
                         std::to_string(size));
}
template <class Op>
Status CheckTableSize(std::int64_t size, int table = 0) {
  return CheckTableSize(TableSpecOf<Op>(table), size);
}

// Each of a call's table sizes against Op's rules (one size per table).
template <class Op>
Status CheckTableSizes(const TableSizes& sizes) {
  if (sizes.count != TableCountOf<Op>()) {
    return InvalidArgument(std::string(Op::kNames.name) + " takes " +
                           std::to_string(TableCountOf<Op>()) + " tables; got " +
                           std::to_string(sizes.count));
  }
  for (int i = 0; i < sizes.count; ++i) {
    CONSTMEM_RETURN_IF_ERROR(CheckTableSize<Op>(sizes[i], i));
  }
  return Status::Ok();
}

// The sizes of a single table's call.
inline TableSizes SizesOf(std::int64_t size) {
  TableSizes sizes;
  sizes.size[0] = size;
  sizes.count = 1;
  return sizes;
}

// The calls every binding makes into an op's description, whichever form it takes its tables in:
// an op with one table gets it as (values, size) and TableView, one with several as Tables<T>.

// Op's Output for x's dims and the call's table sizes: y[i] is output i's dims (y points to
// OutputCountOf<Op>() of them). Every shape is within Op::kMaxElements: an op's Output and kernels
// multiply dimensions freely.
template <class Op>
Status OutputOf(const Dims& x, const typename Op::Params& params, const TableSizes& sizes,
                typename Op::Shape* shape, Dims* y) {
  CONSTMEM_RETURN_IF_ERROR(CheckElementCount(x, Op::kNames.data, Op::kMaxElements));
  if constexpr (kSeveralTables<Op>) {
    CONSTMEM_RETURN_IF_ERROR(Op::Output(x, params, sizes, shape, y));
  } else {
    CONSTMEM_RETURN_IF_ERROR(Op::Output(x, params, sizes[0], shape, y));
  }
  for (int i = 0; i < OutputCountOf<Op>(); ++i) {
    CONSTMEM_RETURN_IF_ERROR(CheckElementCount(y[i], OutputName<Op>(i).c_str(), Op::kMaxElements));
  }
  return Status::Ok();
}

// Each output's dims, as OutputOf gives them.
using OutputDims = std::array<Dims, kMaxOutputs>;

// Runs a CPU kernel's pieces through `shard` with subnormals kept (IEEE arithmetic, no FTZ or DAZ)
// on whichever thread runs them: TensorFlow's and XLA's CPU threads flush them, PyTorch's do not,
// and an op computes the same in every framework.
template <class Shard>
struct KeepSubnormals {
  const Shard& shard;
  template <class Fn>
  void operator()(std::int64_t count, std::int64_t cost, const Fn& fn) const {
    shard(count, cost, [&fn](std::int64_t begin, std::int64_t end) {
      cpu::ScopedFlushDenormals keep(false);
      fn(begin, end);
    });
  }
};

// Op's CPU kernel over host tables (a single table converted to the data's type where the op
// asks for it), subnormals kept (KeepSubnormals), writing y: an Out* (the data's type T, or one of
// the output rule's types), or the Outputs of an op with several.
template <class Op, class T, class Y, class AnyShard>
void RunCpuInto(const typename Op::Params& params, const typename Op::Shape& shape, const T* x, Y y,
                const Tables<T>& tables, const AnyShard& any_shard) {
  const KeepSubnormals<AnyShard> shard{any_shard};
  auto run = [&](auto&&... tail) {
    if constexpr (kSeveralOutputs<Op> || kOutputIsData<Op>) {
      Op::template RunCpu<T>(params, shape, x, y, tail..., shard);
    } else {
      Op::template RunCpu<T, std::remove_pointer_t<Y>>(params, shape, x, y, tail..., shard);
    }
  };
  if constexpr (kSeveralTables<Op>) {
    run(tables);
  } else {
    using Entry = TableEntryOf<Op, T>;
    using CpuEntry = CpuTableEntryOf<Op, T>;
    const TableView<Entry> table = tables.template View<Entry>(0);
    if constexpr (std::is_same<CpuEntry, Entry>::value) {
      run(table.values, table.size);
    } else {
      const std::vector<CpuEntry> converted(table.values, table.values + table.size);
      run(converted.data(), table.size);
    }
  }
}

// RunCpuInto for an op whose output has the data's type.
template <class Op, class T, class AnyShard>
void RunCpuOf(const typename Op::Params& params, const typename Op::Shape& shape, const T* x, T* y,
              const Tables<T>& tables, const AnyShard& shard) {
  RunCpuInto<Op, T, T*>(params, shape, x, y, tables, shard);
}

// The same for an op of one output, y of type `output` (OutputDataTypeOf).
template <class Op, class T, class AnyShard>
void RunCpuOf(const typename Op::Params& params, const typename Op::Shape& shape, const T* x,
              void* y, DataType output, const Tables<T>& tables, const AnyShard& shard) {
  if constexpr (kOutputIsData<Op>) {
    (void)output;
    RunCpuInto<Op, T, T*>(params, shape, x, static_cast<T*>(y), tables, shard);
  } else {
    VisitOutputType<Op>(output, [&](auto out) {
      using Out = decltype(out);
      RunCpuInto<Op, T, Out*>(params, shape, x, static_cast<Out*>(y), tables, shard);
    });
  }
}

// The same for any op, its outputs in `y` (each of the dtype OutputDataTypeOf gives): what the
// bindings call.
template <class Op, class T, class AnyShard>
void RunCpuOf(const typename Op::Params& params, const typename Op::Shape& shape, const T* x,
              const Outputs& y, const Tables<T>& tables, const AnyShard& shard) {
  if constexpr (kSeveralOutputs<Op>) {
    RunCpuInto<Op, T, const Outputs&>(params, shape, x, y, tables, shard);
  } else {
    RunCpuOf<Op, T>(params, shape, x, y.data(0), y.dtype(0), tables, shard);
  }
}

// Op's launcher on `stream` (GPU builds only: Launch is defined by nvcc code), writing y as
// RunCpuInto does.
template <class Op, class T, class Y>
Status LaunchInto(GpuStream stream, const typename Op::Params& params,
                  const typename Op::Shape& shape, const T* x, Y y, const Tables<T>& tables) {
  auto launch = [&](const auto& taken) {
    if constexpr (kSeveralOutputs<Op> || kOutputIsData<Op>) {
      return Op::template Launch<T>(stream, params, shape, x, y, taken);
    } else {
      return Op::template Launch<T, std::remove_pointer_t<Y>>(stream, params, shape, x, y, taken);
    }
  };
  if constexpr (kSeveralTables<Op>) {
    return launch(tables);
  } else {
    return launch(tables.template View<TableEntryOf<Op, T>>(0));
  }
}

// LaunchInto for an op whose output has the data's type.
template <class Op, class T>
Status LaunchOf(GpuStream stream, const typename Op::Params& params,
                const typename Op::Shape& shape, const T* x, T* y, const Tables<T>& tables) {
  return LaunchInto<Op, T, T*>(stream, params, shape, x, y, tables);
}

// The same for an op of one output, y of type `output` (OutputDataTypeOf).
template <class Op, class T>
Status LaunchOf(GpuStream stream, const typename Op::Params& params,
                const typename Op::Shape& shape, const T* x, void* y, DataType output,
                const Tables<T>& tables) {
  if constexpr (kOutputIsData<Op>) {
    (void)output;
    return LaunchInto<Op, T, T*>(stream, params, shape, x, static_cast<T*>(y), tables);
  } else {
    return VisitOutputType<Op>(output, [&](auto out) {
      using Out = decltype(out);
      return LaunchInto<Op, T, Out*>(stream, params, shape, x, static_cast<Out*>(y), tables);
    });
  }
}

// The same for any op, its outputs in `y`: what the bindings call.
template <class Op, class T>
Status LaunchOf(GpuStream stream, const typename Op::Params& params,
                const typename Op::Shape& shape, const T* x, const Outputs& y,
                const Tables<T>& tables) {
  if constexpr (kSeveralOutputs<Op>) {
    return LaunchInto<Op, T, const Outputs&>(stream, params, shape, x, y, tables);
  } else {
    return LaunchOf<Op, T>(stream, params, shape, x, y.data(0), y.dtype(0), tables);
  }
}

// Whether Op's Place also takes the launch's output elements.
template <class Op, class T, class = void>
struct PlaceTakesLaunch : std::false_type {};
template <class Op, class T>
struct PlaceTakesLaunch<
    Op, T,
    std::void_t<decltype(Op::template Place<T>(std::int64_t{}, SourceKind{}, std::int64_t{}))>>
    : std::true_type {};
template <class Op, class T>
struct PlaceTakesLaunch<Op, T,
                        std::void_t<decltype(Op::template Place<T>(int{}, std::int64_t{},
                                                                   SourceKind{}, std::int64_t{}))>>
    : std::true_type {};

// Where Op's launcher puts table `table` of `count` entries from `source` in a launch of
// `launch_elements` output elements (a Place that does not take them answers for every launch).
template <class Op, class T>
Placement PlaceOf(int table, std::int64_t count, SourceKind source,
                  std::int64_t launch_elements = kUnknownLaunchElements) {
  if constexpr (kSeveralTables<Op>) {
    if constexpr (PlaceTakesLaunch<Op, T>::value) {
      return Op::template Place<T>(table, count, source, launch_elements);
    } else {
      return Op::template Place<T>(table, count, source);
    }
  } else {
    (void)table;
    if constexpr (PlaceTakesLaunch<Op, T>::value) {
      return Op::template Place<T>(count, source, launch_elements);
    } else {
      return Op::template Place<T>(count, source);
    }
  }
}

// Whether `choice` is one of `spec`'s comma-separated choices.
inline bool IsChoiceOf(const AttrSpec& spec, std::string_view choice) {
  std::string_view rest = spec.choices;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    if (rest.substr(0, comma) == choice) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

// Op's Params from its attributes' values for data of `dtype`, every binding's one entry: a
// choice outside its list is refused here, before the op's own Read (a raw op called with
// padding="BAD" must not run as the default).
template <class Op>
Status ReadParams(const AttrValue* values, DataType dtype, typename Op::Params* params) {
  for (int i = 0; i < Op::kAttrCount; ++i) {
    const AttrSpec& spec = Op::kAttrs[i];
    const bool named = spec.kind == AttrKind::kChoice || spec.kind == AttrKind::kDataType;
    if (!named || IsChoiceOf(spec, values[i].choice)) continue;
    std::string expected = spec.choices;
    for (char& c : expected) {
      if (c == ',') c = '/';
    }
    return InvalidArgument(std::string(spec.name) + " must be one of " + expected + "; got '" +
                           std::string(values[i].choice) + "'");
  }
  return params->Read(values, dtype);
}

// Runs fn(begin, end) over [0, count) on the calling thread: a binding whose caller shards
// (XLA's CPU handlers).
struct SerialShard {
  template <class Fn>
  void operator()(std::int64_t count, std::int64_t /*cost*/, const Fn& fn) const {
    if (count > 0) fn(0, count);
  }
};

namespace detail {

inline void AppendJsonString(std::string* out, std::string_view text) {
  out->push_back('"');
  for (char c : text) {
    if (c == '"' || c == '\\') out->push_back('\\');
    if (c == '\n') {
      out->append("\\n");
      continue;
    }
    out->push_back(c);
  }
  out->push_back('"');
}

template <class Op>
void AppendOpJson(std::string* out) {
  auto field = [&](const char* key, std::string_view value) {
    AppendJsonString(out, key);
    out->push_back(':');
    AppendJsonString(out, value);
    out->push_back(',');
  };
  auto number = [&](const char* key, std::int64_t value) {
    AppendJsonString(out, key);
    out->append(":" + std::to_string(value) + ",");
  };
  auto flag = [&](const char* key, bool value) {
    AppendJsonString(out, key);
    out->append(value ? ":true," : ":false,");
  };
  out->push_back('{');
  field("library", Op::kNames.library);
  field("type", Op::kNames.type);
  field("name", Op::kNames.name);
  field("data", Op::kNames.data);
  const TableSpec first = TableSpecOf<Op>(0);  // what a reader of one table takes
  field("table", first.name);
  number("min_table", first.min_size);
  number("max_table", first.max_size);
  flag("int32_table", first.int32);
  flag("float64", TakesDataType<Op>(DataType::kFloat64));
  flag("elementwise", Op::kElementwise);
  AppendJsonString(out, "tables");
  out->append(":[");
  for (int i = 0; i < TableCountOf<Op>(); ++i) {
    const TableSpec table = TableSpecOf<Op>(i);
    if (i > 0) out->push_back(',');
    out->push_back('{');
    field("name", table.name);
    number("min_size", table.min_size);
    number("max_size", table.max_size);
    AppendJsonString(out, "int32");
    out->append(table.int32 ? ":true}" : ":false}");
  }
  out->append("],");
  AppendJsonString(out, "dtypes");
  out->append(":[");
  const std::vector<const char*> dtypes = DataTypeNames<Op>();
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendJsonString(out, dtypes[i]);
  }
  out->append("],");
  field("doc", Op::kDoc);
  // Each output's dtype: "data", or "fixed" (its one type) or "attr" (the types the attribute
  // named picks among); "output" is the first's (what a reader of one output takes).
  auto output_json = [&](const OutputSpec& spec, bool named) {
    out->push_back('{');
    if (named) field("name", spec.name);
    static constexpr const char* kRules[] = {"data", "fixed", "attr"};
    field("rule", kRules[static_cast<int>(spec.dtype.rule)]);
    if (spec.dtype.rule == OutputRule::kAttr) field("attr", Op::kAttrs[spec.dtype.attr].name);
    AppendJsonString(out, "dtypes");
    out->append(":[");
    bool first_type = true;
    for (int i = 0; i < kDataTypeCount; ++i) {
      if (!spec.dtype.types.Has(static_cast<DataType>(i))) continue;
      if (!first_type) out->push_back(',');
      first_type = false;
      AppendJsonString(out, DataTypeName(static_cast<DataType>(i)));
    }
    out->append("]}");
  };
  AppendJsonString(out, "output");
  out->push_back(':');
  output_json(OutputSpecOf<Op>(0), false);
  out->push_back(',');
  AppendJsonString(out, "outputs");
  out->append(":[");
  for (int i = 0; i < OutputCountOf<Op>(); ++i) {
    if (i > 0) out->push_back(',');
    output_json(OutputSpecOf<Op>(i), true);
  }
  out->append("],");
  AppendJsonString(out, "attrs");
  out->append(":[");
  for (int i = 0; i < Op::kAttrCount; ++i) {
    const AttrSpec& attr = Op::kAttrs[i];
    static constexpr const char* kKinds[] = {"choice", "float64", "int64", "dtype"};
    if (i > 0) out->push_back(',');
    out->push_back('{');
    field("name", attr.name);
    field("choices", attr.choices);
    AppendJsonString(out, "kind");
    out->push_back(':');
    AppendJsonString(out, kKinds[static_cast<int>(attr.kind)]);
    out->push_back('}');
  }
  out->append("]}");
}

// The data type named `dtype` ("float32", "bfloat16", ...) if Op takes it.
template <class Op>
Status DataTypeNamed(std::string_view dtype, DataType* type) {
  for (int i = 0; i < kDataTypeCount; ++i) {
    const auto candidate = static_cast<DataType>(i);
    if (dtype == DataTypeName(candidate) && TakesDataType<Op>(candidate)) {
      *type = candidate;
      return Status::Ok();
    }
  }
  return InvalidArgument(std::string(Op::kNames.data) + " must be " + DataTypeList<Op>() +
                         "; got " + std::string(dtype));
}

// What Op's kernels check before they run, for data of `dtype` and dims `x` with tables of
// `sizes`: the attributes, the tables' sizes and the description's Output; each output's dims
// (y[i]).
template <class Op>
Status CheckCallOf(std::string_view dtype, const Dims& x, const TableSizes& sizes,
                   const AttrValue* values, Dims* y) {
  DataType type = DataType::kFloat32;
  CONSTMEM_RETURN_IF_ERROR(DataTypeNamed<Op>(dtype, &type));
  typename Op::Params params;
  CONSTMEM_RETURN_IF_ERROR(ReadParams<Op>(values, type, &params));
  CONSTMEM_RETURN_IF_ERROR(CheckTableSizes<Op>(sizes));
  typename Op::Shape shape;
  return OutputOf<Op>(x, params, sizes, &shape, y);
}

// Copies `message` into the caller's `error` of `error_size` bytes, cut to fit.
inline void CopyError(const std::string& message, char* error, int error_size) {
  if (error == nullptr || error_size <= 0) return;
  const std::size_t n = std::min<std::size_t>(message.size(), error_size - 1);
  message.copy(error, n);
  error[n] = '\0';
}

// An argument of an exported call that holds `count` values: non-null where count > 0.
inline Status CheckArgument(const void* pointer, long long count, const char* name) {
  if (pointer != nullptr || count <= 0) return Status::Ok();
  return InvalidArgument(std::string(name) + " must not be null (" + std::to_string(count) +
                         " values)");
}

// CheckCallOf for the op of Ops... named `name`, its tables' sizes in order, its attributes given
// by position as C values (a choice's string, a float64, an int64: the array of its kind holds it
// at the attribute's index). What an op library exports for Python to check a call while a
// framework traces it. Each output's dims go one after another into `y_dims` (room for
// `y_capacity`), its rank into `y_ranks` (room for `*y_count` outputs, the first of them if fewer
// than the op gives); `*y_count` becomes the op's output count. Returns 0 (the dims set), 1 for a
// call the op refuses or bad arguments, 2 for anything else, with the message in `error`; it
// never throws.
template <class... Ops>
int ExportedCheckOutputs(const char* name, const char* dtype, const long long* dims, int rank,
                         const long long* table_sizes, int table_count, const char* const* choices,
                         const double* floats, const long long* ints, long long* y_dims,
                         int y_capacity, int* y_ranks, int* y_count, char* error,
                         int error_size) noexcept {
  Status status;
  OutputDims y;
  int outputs = 0;
  try {
    for (const Status& checked :
         {CheckArgument(name, 1, "name"), CheckArgument(dtype, 1, "dtype"),
          CheckArgument(y_count, 1, "y_count"), CheckArgument(dims, rank, "dims"),
          CheckArgument(table_sizes, table_count, "table_sizes"),
          CheckArgument(y_dims, y_capacity, "y_dims")}) {
      if (status.ok()) status = checked;
    }
    if (status.ok() && (rank < 0 || table_count < 0 || table_count > kMaxTables)) {
      status = InvalidArgument("rank must be 0 or more and table_count 0 to " +
                               std::to_string(kMaxTables) + "; got " + std::to_string(rank) +
                               " and " + std::to_string(table_count));
    }
    if (status.ok()) status = CheckArgument(y_ranks, *y_count, "y_ranks");
    bool found = false;
    auto one = [&](auto* op) {
      using Op = std::remove_pointer_t<decltype(op)>;
      if (found || std::string_view(name) != Op::kNames.name) return;
      found = true;
      outputs = OutputCountOf<Op>();
      for (const Status& checked : {CheckArgument(choices, Op::kAttrCount, "choices"),
                                    CheckArgument(floats, Op::kAttrCount, "floats"),
                                    CheckArgument(ints, Op::kAttrCount, "ints")}) {
        if (status.ok()) status = checked;
      }
      if (!status.ok()) return;
      std::vector<AttrValue> values(Op::kAttrCount + 1);
      for (int i = 0; i < Op::kAttrCount; ++i) {
        values[i].choice = choices[i] != nullptr ? choices[i] : "";
        values[i].float64 = floats[i];
        values[i].int64 = ints[i];
      }
      TableSizes sizes;
      sizes.count = table_count;
      for (int i = 0; i < sizes.count; ++i) sizes.size[i] = table_sizes[i];
      status = CheckCallOf<Op>(dtype, Dims(dims, dims + rank), sizes, values.data(), y.data());
    };
    if (status.ok()) {
      (one(static_cast<Ops*>(nullptr)), ...);
      if (!found) status = InvalidArgument(std::string("no op named ") + name);
    }
  } catch (const std::exception& e) {  // std::bad_alloc: nothing crosses the C boundary
    status = Status(StatusCode::kResourceExhausted, e.what());
  }
  if (status.ok()) {
    const int written = std::min(outputs, *y_count);
    std::size_t total = 0;
    for (int i = 0; i < written; ++i) total += y[i].size();
    if (total <= static_cast<std::size_t>(y_capacity)) {
      long long* next = y_dims;
      for (int i = 0; i < written; ++i) {
        y_ranks[i] = static_cast<int>(y[i].size());
        next = std::copy(y[i].begin(), y[i].end(), next);
      }
      *y_count = outputs;
      return 0;
    }
  }
  CopyError(status.ok() ? std::string("the outputs have too many dimensions") : status.message(),
            error, error_size);
  return status.ok() || status.code() == StatusCode::kInvalidArgument ? 1 : 2;
}

// ExportedCheckOutputs for the first output alone (y_rank: in, the room in y_dims; out, its rank).
template <class... Ops>
int ExportedCheckCall(const char* name, const char* dtype, const long long* dims, int rank,
                      const long long* table_sizes, int table_count, const char* const* choices,
                      const double* floats, const long long* ints, long long* y_dims, int* y_rank,
                      char* error, int error_size) noexcept {
  if (y_rank == nullptr) {
    CopyError("y_rank must not be null (1 values)", error, error_size);
    return 1;
  }
  int count = 1;
  return ExportedCheckOutputs<Ops...>(name, dtype, dims, rank, table_sizes, table_count, choices,
                                      floats, ints, y_dims, *y_rank, y_rank, &count, error,
                                      error_size);
}

// Where Op's launcher would place its table `table` (0 for an op with one) of `count` entries
// from `source` (0: the host, 1: the data's device) for data named `dtype`, in a launch of
// `elements` output elements (negative: not known, a large launch): the placement's name, "" for
// a library built without GPU kernels (Place is instantiated only with them), nullptr for an
// unknown op, table, dtype or source, or a count outside the table's limits.
template <class... Ops>
const char* ExportedPlacement(const char* name, int table, const char* dtype, long long count,
                              int source, long long elements) noexcept {
  const char* found = nullptr;
  if (name == nullptr || dtype == nullptr || (source != 0 && source != 1)) return nullptr;
  auto one = [&](auto* op) {
    using Op = std::remove_pointer_t<decltype(op)>;
    DataType type = DataType::kFloat32;
    if (std::string_view(name) != Op::kNames.name || table < 0 || table >= TableCountOf<Op>() ||
        !DataTypeNamed<Op>(dtype, &type).ok() || !CheckTableSize<Op>(count, table).ok()) {
      return;
    }
#if CONSTMEM_WITH_GPU
    const SourceKind kind = source == 1 ? SourceKind::kDevice : SourceKind::kPageableHost;
    const std::int64_t launch = elements < 0 ? kUnknownLaunchElements : elements;
    found = PlacementName(VisitDataType<Op>(
        type, [&](auto zero) { return PlaceOf<Op, decltype(zero)>(table, count, kind, launch); }));
#else
    (void)count;
    (void)elements;
    found = "";
#endif
  };
  try {
    (one(static_cast<Ops*>(nullptr)), ...);
  } catch (const std::exception&) {  // std::bad_alloc of a message: nothing crosses the C boundary
    return nullptr;
  }
  return found;
}

}  // namespace detail

namespace detail {

constexpr bool SameName(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

// Whether Op's data, tables and attributes have a name each: every framework passes them by name
// (a static table is an attribute of its own in TensorFlow and XLA).
template <class Op>
constexpr bool NamesAreDistinct() {
  // kNames.table names the first table, which the registry lists as the op's table.
  if (!SameName(Op::kNames.table, TableSpecOf<Op>(0).name)) return false;
  const int tables = TableCountOf<Op>();
  for (int i = 0; i < tables; ++i) {
    if (SameName(TableSpecOf<Op>(i).name, Op::kNames.data)) return false;
    for (int j = i + 1; j < tables; ++j) {
      if (SameName(TableSpecOf<Op>(i).name, TableSpecOf<Op>(j).name)) return false;
    }
    for (int a = 0; a < Op::kAttrCount; ++a) {
      if (SameName(TableSpecOf<Op>(i).name, Op::kAttrs[a].name)) return false;
    }
  }
  return true;
}

// Whether each of `choices` (comma-separated) names a type of `types`, and every type is named.
constexpr bool ChoicesNameTypes(const char* choices, DataTypeSet types) {
  int named = 0;
  const char* start = choices;
  for (const char* p = choices;; ++p) {
    if (*p != ',' && *p != '\0') continue;
    bool found = false;
    for (int t = 0; t < kDataTypeCount; ++t) {
      const char* name = DataTypeName(static_cast<DataType>(t));
      const char* c = start;
      while (c != p && *name != '\0' && *c == *name) {
        ++c;
        ++name;
      }
      if (c == p && *name == '\0' && types.Has(static_cast<DataType>(t))) found = true;
    }
    if (!found) return false;
    ++named;
    if (*p == '\0') break;
    start = p + 1;
  }
  int count = 0;
  for (int t = 0; t < kDataTypeCount; ++t) count += types.Has(static_cast<DataType>(t)) ? 1 : 0;
  return named == count;
}

// Whether `output`, a rule of Op's, is whole: a fixed dtype is one type; an attribute's is an
// attribute of kind kDataType whose choices are the rule's types.
template <class Op>
constexpr bool OutputRuleIsWhole(const OutputDType& output) {
  if (output.rule == OutputRule::kData) return true;
  if (output.rule == OutputRule::kFixed) {
    int count = 0;
    for (int t = 0; t < kDataTypeCount; ++t) count += output.types.Has(static_cast<DataType>(t));
    return count == 1;
  }
  if constexpr (Op::kAttrCount > 0) {
    return output.attr >= 0 && output.attr < Op::kAttrCount &&
           Op::kAttrs[output.attr].kind == AttrKind::kDataType &&
           ChoicesNameTypes(Op::kAttrs[output.attr].choices, output.types);
  } else {
    return false;
  }
}

// Whether every one of Op's output rules is whole.
template <class Op>
constexpr bool OutputRulesAreWhole() {
  for (int i = 0; i < OutputCountOf<Op>(); ++i) {
    if (!OutputRuleIsWhole<Op>(OutputSpecOf<Op>(i).dtype)) return false;
  }
  return true;
}

// Whether an op's several outputs are whole: their own rules in place of kOutputDType (left as
// the default), a name each, none the data's, a table's or an attribute's (TensorFlow's op
// definition names every input, output and attr), and no elementwise flag (each output's shape is
// Output's).
template <class Op>
constexpr bool OutputsAreWhole() {
  if constexpr (!kSeveralOutputs<Op>) {
    return true;
  } else {
    if (Op::kOutputDType.rule != OutputRule::kData || Op::kElementwise) return false;
    for (int i = 0; i < OutputCountOf<Op>(); ++i) {
      const char* name = OutputSpecOf<Op>(i).name;
      if (SameName(name, Op::kNames.data)) return false;
      for (int j = i + 1; j < OutputCountOf<Op>(); ++j) {
        if (SameName(name, OutputSpecOf<Op>(j).name)) return false;
      }
      for (int t = 0; t < TableCountOf<Op>(); ++t) {
        if (SameName(name, TableSpecOf<Op>(t).name)) return false;
      }
      for (int a = 0; a < Op::kAttrCount; ++a) {
        if (SameName(name, Op::kAttrs[a].name)) return false;
      }
    }
    return true;
  }
}

}  // namespace detail

// The registry of ops Ops... as JSON: a list of each op's names, table rule, flags and attributes,
// which an op library exports (constmem_op_registry) for its Python package.
template <class... Ops>
std::string OpRegistryJson() {
  static_assert((detail::NamesAreDistinct<Ops>() && ...),
                "an op's data, tables and attributes need a name each, and kNames.table is its "
                "first table's");
  static_assert((detail::OutputRulesAreWhole<Ops>() && ...),
                "a fixed output dtype is one type; an attribute's is of kind kDataType and its "
                "choices name the rule's types");
  static_assert((detail::OutputsAreWhole<Ops>() && ...),
                "an op of several outputs (kOutputs) leaves kOutputDType alone and kElementwise "
                "false, and names each output apart from the others, its data, tables and "
                "attributes");
  std::string out = "[";
  bool first = true;
  ((out += first ? "" : ",", first = false, detail::AppendOpJson<Ops>(&out)), ...);
  return out + "]";
}

}  // namespace constmem

// The registry of an op library's ops, exported as `const char* symbol()` for its Python package;
// `symbol_check_call` (detail::ExportedCheckCall), which runs an op's checks for a call without
// running it: JAX calls it while it traces, so a description's refusal is a ValueError then; and
// `symbol_table_placement` (detail::ExportedPlacement), where a table would go, asked on any
// machine; `symbol_check_outputs` (detail::ExportedCheckOutputs), the same check giving every
// output's dims; and the core's counters in this library (each library has its own), which its
// package's upload_stats() and table_placements() read: `symbol_counter_count`, and each one's
// `symbol_counter_name` and `symbol_counter_value`.
#define CONSTMEM_EXPORT_OP_REGISTRY(symbol, ...)                                                  \
  extern "C" __attribute__((visibility("default"))) const char* symbol() {                        \
    static const std::string* registry =                                                          \
        new std::string(::constmem::OpRegistryJson<__VA_ARGS__>());                               \
    return registry->c_str();                                                                     \
  }                                                                                               \
  extern "C" __attribute__((visibility("default"))) int symbol##_check_call(                      \
      const char* name, const char* dtype, const long long* dims, int rank,                       \
      const long long* table_sizes, int table_count, const char* const* choices,                  \
      const double* floats, const long long* ints, long long* y_dims, int* y_rank, char* error,   \
      int error_size) {                                                                           \
    return ::constmem::detail::ExportedCheckCall<__VA_ARGS__>(                                    \
        name, dtype, dims, rank, table_sizes, table_count, choices, floats, ints, y_dims, y_rank, \
        error, error_size);                                                                       \
  }                                                                                               \
  extern "C" __attribute__((visibility("default"))) int symbol##_check_outputs(                   \
      const char* name, const char* dtype, const long long* dims, int rank,                       \
      const long long* table_sizes, int table_count, const char* const* choices,                  \
      const double* floats, const long long* ints, long long* y_dims, int y_capacity,             \
      int* y_ranks, int* y_count, char* error, int error_size) {                                  \
    return ::constmem::detail::ExportedCheckOutputs<__VA_ARGS__>(                                 \
        name, dtype, dims, rank, table_sizes, table_count, choices, floats, ints, y_dims,         \
        y_capacity, y_ranks, y_count, error, error_size);                                         \
  }                                                                                               \
  extern "C" __attribute__((visibility("default"))) const char* symbol##_table_placement(         \
      const char* name, int table, const char* dtype, long long count, int source,                \
      long long elements) {                                                                       \
    return ::constmem::detail::ExportedPlacement<__VA_ARGS__>(name, table, dtype, count, source,  \
                                                              elements);                          \
  }                                                                                               \
  extern "C" __attribute__((visibility("default"))) int symbol##_counter_count() {                \
    return static_cast<int>(::constmem::Counter::kCount);                                         \
  }                                                                                               \
  extern "C" __attribute__((visibility("default"))) const char* symbol##_counter_name(int i) {    \
    if (i < 0 || i >= symbol##_counter_count()) return nullptr;                                   \
    return ::constmem::CounterName(static_cast<::constmem::Counter>(i));                          \
  }                                                                                               \
  extern "C" __attribute__((visibility("default"))) long long symbol##_counter_value(int i) {     \
    if (i < 0 || i >= symbol##_counter_count()) return -1;                                        \
    return ::constmem::CounterValue(static_cast<::constmem::Counter>(i));                         \
  }

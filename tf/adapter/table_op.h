// SPDX-License-Identifier: Apache-2.0
// An op's TensorFlow binding, made from its description (constmem/op_description.hpp): its op
// definitions in the three table forms (with shape functions), its CPU and GPU kernels for
// float32 and float64 data (and uint8 data with a float32 table, for ops that take it), their
// registration and (xla/xla_lowering.h) its XLA lowering. An op with several outputs has them
// under their names, in its order, each of its own dtype:
//
//   CONSTMEM_REGISTER_TABLE_OP(my::ScaleOp);
//   CONSTMEM_REGISTER_TABLE_OP_XLA(my::ScaleOp);  // optional: under tf.function(jit_compile=True)
//
// The forms are `My>Scale` (the table an input), `My>ScaleHostTable` (an input in host memory)
// and `My>ScaleAttr` (fixed per node). An op with several tables (kTables) has the same three
// forms, each for all its tables: its inputs are the data, then each table under its own name in
// the op's order (every one in host memory in the HostTable form), and its Attr form has an attr
// per table, named by the table. An attribute of kind choice is a string attr of those values,
// one of kind float64 an int attr holding its IEEE-754 bits, one of kind int64 an int attr. In
// Python, constmem.tensorflow.TableOp runs the form a caller picks.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "adapter/kernel_registration.h"
#include "adapter/table_adapter.h"
#include "adapter/xla/xla_lowering.h"
#include "constmem/op_description.hpp"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor_shape.h"
#include "tensorflow/core/framework/types.h"
#if CONSTMEM_WITH_XLA
#include "xla_ffi/ffi_support.h"  // the FFI handlers the lowering calls
#endif

namespace constmem {
namespace tf_adapter {

// TensorFlow's name of an op: "Library>Type", the library's first letter capitalised.
std::string TfOpName(const OpNames& names);

// The REGISTER_OP attr specs of an op's attributes.
std::vector<std::string> TfAttrSpecs(const AttrSpec* attrs, int count);

// Reads an op's attributes from a TensorFlow attr source (OpKernelConstruction,
// InferenceContext, a node's attrs): `storage` keeps the choices' text alive.
template <class Attrs>
absl::Status ReadTfAttrs(const Attrs& attrs, const AttrSpec* specs, int count, AttrValue* values,
                         std::string* storage) {
  for (int i = 0; i < count; ++i) {
    switch (specs[i].kind) {
      case AttrKind::kChoice:
        TF_RETURN_IF_ERROR(attrs.GetAttr(specs[i].name, &storage[i]));
        values[i].choice = storage[i];
        break;
      case AttrKind::kDataType: {  // a type attr, by the name every other framework passes
        tensorflow::DataType type;
        TF_RETURN_IF_ERROR(attrs.GetAttr(specs[i].name, &type));
        storage[i] = DataTypeName(ToDataType(type));
        values[i].choice = storage[i];
        break;
      }
      case AttrKind::kFloat64: {
        std::int64_t bits = 0;
        TF_RETURN_IF_ERROR(attrs.GetAttr(specs[i].name, &bits));
        std::memcpy(&values[i].float64, &bits, sizeof(bits));
        break;
      }
      case AttrKind::kInt64: {
        std::int64_t value = 0;
        TF_RETURN_IF_ERROR(attrs.GetAttr(specs[i].name, &value));
        values[i].int64 = value;
        break;
      }
    }
  }
  return absl::OkStatus();
}

// Whether Op takes data whose compute type is not its own type: its table inputs then have a type
// attr of their own, Ttable.
template <class Op>
constexpr bool TakesNarrowData() {
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16, DataType::kUint8, DataType::kInt8,
                        DataType::kInt32}) {
    if (TakesDataType<Op>(type)) return true;
  }
  return false;
}

// The op definition's type of Op's output i: "T", the fixed type ("bfloat16"), or the name of the
// type attr that picks it.
template <class Op>
std::string TfOutputType(int i) {
  const OutputDType output = OutputSpecOf<Op>(i).dtype;
  if (output.rule == OutputRule::kData) return "T";
  if (output.rule == OutputRule::kFixed) {
    return tensorflow::DataTypeString(
        TfDataType(OutputDataType(output, DataType::kFloat32, nullptr)));
  }
  return Op::kAttrs[output.attr].name;
}

// Op's outputs as the op definitions list them: "y: T", or "codes: uint8" and "absmax: float".
template <class Op>
std::vector<std::string> TfOutputSpecs() {
  std::vector<std::string> outputs;
  for (int i = 0; i < OutputCountOf<Op>(); ++i) {
    outputs.push_back(std::string(OutputSpecOf<Op>(i).name) + ": " + TfOutputType<Op>(i));
  }
  return outputs;
}

// "float, double, half": the op definition's list of the data types Op takes.
template <class Op>
std::string TfTypeList() {
  std::string list;
  ForEachDataTypeOf<Op>([&](auto zero) {
    list += (list.empty() ? "" : ", ") + tensorflow::DataTypeString(TfDataTypeOf<decltype(zero)>());
  });
  return list;
}

// Op's Params from TensorFlow attrs, for data of `dtype`.
template <class Op, class Attrs>
absl::Status ReadParams(const Attrs& attrs, tensorflow::DataType dtype,
                        typename Op::Params* params) {
  constexpr int kCount = Op::kAttrCount;
  std::array<AttrValue, kCount + 1> values{};
  std::array<std::string, kCount + 1> storage{};
  TF_RETURN_IF_ERROR(ReadTfAttrs(attrs, Op::kAttrs, kCount, values.data(), storage.data()));
  return ToTfStatus(::constmem::ReadParams<Op>(values.data(), ToDataType(dtype), params));
}

// The XLA custom call's attributes, an MLIR dictionary, from an op's attributes.
std::string XlaAttributeDictionary(const AttrSpec* specs, int count, const AttrValue* values);

template <class Op, class Attrs>
absl::Status XlaAttributes(const Attrs& attrs, std::string* dictionary) {
  constexpr int kCount = Op::kAttrCount;
  std::array<AttrValue, kCount + 1> values{};
  std::array<std::string, kCount + 1> storage{};
  TF_RETURN_IF_ERROR(ReadTfAttrs(attrs, Op::kAttrs, kCount, values.data(), storage.data()));
  *dictionary = XlaAttributeDictionary(Op::kAttrs, kCount, values.data());
  return absl::OkStatus();
}

// Calls fn(std::integral_constant<int, I>{}) for each of Op's tables I, in order, until one returns
// an error.
template <class Fn, int... I>
absl::Status ForEachTableIn(std::integer_sequence<int, I...>, const Fn& fn) {
  absl::Status status;
  ((status.ok() ? (status = fn(std::integral_constant<int, I>{}), 0) : 0), ...);
  return status;
}
template <class Op, class Fn>
absl::Status ForEachTable(const Fn& fn) {
  return ForEachTableIn(std::make_integer_sequence<int, TableCountOf<Op>()>{}, fn);
}

// Whether one of Op's tables holds entries of the data's compute type (else all are int32).
template <class Op>
constexpr bool HasComputeTypeTable() {
  for (int i = 0; i < TableCountOf<Op>(); ++i) {
    if (!TableSpecOf<Op>(i).int32) return true;
  }
  return false;
}

// Op's tables, as the op definitions list them.
template <class Op>
std::vector<TableSpec> TableSpecs() {
  std::vector<TableSpec> tables;
  for (int i = 0; i < TableCountOf<Op>(); ++i) tables.push_back(TableSpecOf<Op>(i));
  return tables;
}

// The per-table types of Op's kernels for data of type T: a TableOperand each, and a
// GpuTableArgument each for a launch.
template <class Op, class T, class Indices = std::make_integer_sequence<int, TableCountOf<Op>()>>
struct TableTypesOf;
template <class Op, class T, int... I>
struct TableTypesOf<Op, T, std::integer_sequence<int, I...>> {
  using Operands = std::tuple<TableOperand<TableEntryOf<Op, T, I>>...>;
  using GpuArguments = std::tuple<GpuTableArgument<TableEntryOf<Op, T, I>>...>;
};

// Each output's shape (y[i]) and the launch's Shape from x's and the tables' sizes, by the op's
// Output.
template <class Op>
absl::Status OutputShapes(const tensorflow::TensorShape& x, const typename Op::Params& params,
                          const TableSizes& sizes, typename Op::Shape* shape,
                          tensorflow::TensorShape* y) {
  const auto dims = x.dim_sizes();
  OutputDims y_dims;
  TF_RETURN_IF_ERROR(ToTfStatus(
      OutputOf<Op>(Dims(dims.begin(), dims.end()), params, sizes, shape, y_dims.data())));
  for (int i = 0; i < OutputCountOf<Op>(); ++i) {
    TF_RETURN_IF_ERROR(tensorflow::TensorShape::BuildTensorShape(y_dims[i], &y[i]));
  }
  return absl::OkStatus();
}

// Registers the op definitions of the three forms (not the kernels).
struct TableOpDef {
  std::string name;
  std::string data;
  std::vector<TableSpec> tables;  // each an input (or an attr), named by the table, in order
  // Each output's arg spec, "y: T": its type "T" (the data's), a type ("bfloat16") or a type
  // attr's name.
  std::vector<std::string> outputs;
  std::string types;   // the data types, as the attr "T" lists them ("float, double, half")
  bool table_type;     // the type of the tables not of int32 is the attr Ttable, the data's
                       // compute type (TakesNarrowData)
  bool double_tables;  // Ttable may be double (for float64 or int32 data)
  std::vector<std::string> attrs;
  std::string doc;
  std::function<absl::Status(tensorflow::shape_inference::InferenceContext*)> input_shape;
  std::function<absl::Status(tensorflow::shape_inference::InferenceContext*)> attr_shape;
};
void RegisterTableOpDefs(const TableOpDef& def);

// Runs fn(begin, end) over [0, count) on the CPU device's worker threads (ShardOnCpuWorkers).
struct CpuWorkers {
  tensorflow::OpKernelContext* ctx;
  void operator()(std::int64_t count, std::int64_t cost_per_element,
                  const std::function<void(std::int64_t, std::int64_t)>& fn) const {
    ShardOnCpuWorkers(ctx, count, cost_per_element, fn);
  }
};

// The size of the attr table `table`, after checking its length and values (entries of int32, or
// of the compute type of data of `dtype`).
template <class Context>
absl::Status AttrTableSize(Context* c, const TableSpec& table, tensorflow::DataType dtype,
                           std::int64_t* size) {
  auto read = [&](auto zero) {
    std::vector<decltype(zero)> values;
    absl::Status status = ReadAttrTable(c, table.name, table.max_size, &values, table.min_size);
    *size = static_cast<std::int64_t>(values.size());
    return status;
  };
  if (table.int32) return read(std::int32_t{});
  return ComputesInDouble(dtype) ? read(double{}) : read(float{});
}

template <class Op, TableFrom kFrom>
absl::Status InferTableOpShape(tensorflow::shape_inference::InferenceContext* c) {
  tensorflow::DataType dtype;
  TF_RETURN_IF_ERROR(c->GetAttr("T", &dtype));
  if constexpr (TakesNarrowData<Op>() && HasComputeTypeTable<Op>()) {
    if (kFrom != TableFrom::kAttr) {  // the tables' type is Ttable: the data's compute type
      tensorflow::DataType table_type;
      TF_RETURN_IF_ERROR(c->GetAttr("Ttable", &table_type));
      const tensorflow::DataType expected =
          ComputesInDouble(dtype) ? tensorflow::DT_DOUBLE : tensorflow::DT_FLOAT;
      if (table_type != expected) {
        int first = 0;  // the first table of Ttable names them
        while (TableSpecOf<Op>(first).int32) ++first;
        return absl::InvalidArgumentError(
            std::string(TableSpecOf<Op>(first).name) + " must be " +
            tensorflow::DataTypeString(expected) + " for " + Op::kNames.data + " of " +
            tensorflow::DataTypeString(dtype) + "; got " + tensorflow::DataTypeString(table_type));
      }
    }
  }
  TableSizes sizes;
  sizes.count = TableCountOf<Op>();
  TF_RETURN_IF_ERROR(ForEachTable<Op>([&](auto i) -> absl::Status {
    constexpr int kIndex = decltype(i)::value;
    constexpr TableSpec table = TableSpecOf<Op>(kIndex);
    sizes.size[kIndex] = kUnknownDim;
    if (kFrom == TableFrom::kAttr) return AttrTableSize(c, table, dtype, &sizes.size[kIndex]);
    TF_RETURN_IF_ERROR(InferTableShape(c, 1 + kIndex, table.name, table.max_size, table.min_size));
    const tensorflow::shape_inference::ShapeHandle shape = c->input(1 + kIndex);
    if (c->RankKnown(shape) && c->ValueKnown(c->Dim(shape, 0))) {
      sizes.size[kIndex] = c->Value(c->Dim(shape, 0));
    }
    return absl::OkStatus();
  }));
  typename Op::Params params;
  TF_RETURN_IF_ERROR(ReadParams<Op>(*c, dtype, &params));
  const tensorflow::shape_inference::ShapeHandle x = c->input(0);
  if (!c->RankKnown(x)) {
    for (int i = 0; i < OutputCountOf<Op>(); ++i) {
      c->set_output(i, Op::kElementwise ? x : c->UnknownShape());
    }
    return absl::OkStatus();
  }
  Dims x_dims(c->Rank(x));
  for (int d = 0; d < c->Rank(x); ++d) x_dims[d] = c->Value(c->Dim(x, d));
  typename Op::Shape shape;
  OutputDims y_dims;
  TF_RETURN_IF_ERROR(ToTfStatus(OutputOf<Op>(x_dims, params, sizes, &shape, y_dims.data())));
  if (Op::kElementwise) {  // the input's own handle keeps what TensorFlow knows of its dimensions
    c->set_output(0, x);
    return absl::OkStatus();
  }
  for (int i = 0; i < OutputCountOf<Op>(); ++i) {
    std::vector<tensorflow::shape_inference::DimensionHandle> dims;
    for (std::size_t d = 0; d < y_dims[i].size(); ++d) {
      const bool same = d < x_dims.size() && y_dims[i][d] == x_dims[d];
      dims.push_back(same ? c->Dim(x, static_cast<std::int64_t>(d))
                          : c->MakeDim(y_dims[i][d] < 0 ? -1 : y_dims[i][d]));
    }
    c->set_output(i, c->MakeShape(dims));
  }
  return absl::OkStatus();
}

// What the CPU and GPU kernels of one form share: the attrs, the table operands, the output.
template <class Op, class T, TableFrom kFrom>
class TableOpKernel : public tensorflow::OpKernel {
 public:
  explicit TableOpKernel(tensorflow::OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadParams<Op>(*ctx, TfDataTypeOf<T>(), &params_));
    OP_REQUIRES_OK(ctx, ForEachTable<Op>([&](auto i) {
                     constexpr int kIndex = decltype(i)::value;
                     constexpr TableSpec table = TableSpecOf<Op>(kIndex);
                     return std::get<kIndex>(tables_).Init(ctx, kFrom, 1 + kIndex, table.name,
                                                           table.max_size, table.min_size);
                   }));
  }

 protected:
  // Checks x and the tables' sizes against the attrs, works out the shapes, allocates each
  // output (of the dtype its op definition gives) into `outputs`.
  absl::Status PrepareOutputs(tensorflow::OpKernelContext* ctx, const TableSizes& sizes,
                              typename Op::Shape* shape, Outputs* outputs) const {
    const tensorflow::TensorShape& x = ctx->input(0).shape();
    std::array<tensorflow::TensorShape, OutputCountOf<Op>()> y;
    TF_RETURN_IF_ERROR(OutputShapes<Op>(x, params_, sizes, shape, y.data()));
    for (int i = 0; i < OutputCountOf<Op>(); ++i) {
      tensorflow::Tensor* output = nullptr;
      if (Op::kElementwise) {
        TF_RETURN_IF_ERROR(ctx->forward_input_or_allocate_output({0}, i, y[i], &output));
      } else {
        TF_RETURN_IF_ERROR(ctx->allocate_output(i, y[i], &output));
      }
      outputs->Set(i, output->data(), ToDataType(output->dtype()));
    }
    return absl::OkStatus();
  }

  typename Op::Params params_;
  typename TableTypesOf<Op, T>::Operands tables_;
};

template <class Op>
struct TableOpKernels {
  template <class T, TableFrom kFrom>
  class Cpu : public TableOpKernel<Op, T, kFrom> {
   public:
    explicit Cpu(tensorflow::OpKernelConstruction* ctx) : TableOpKernel<Op, T, kFrom>(ctx) {
      if constexpr (kConverts) {
        const auto& attr = std::get<0>(this->tables_).attr_values();
        converted_.assign(attr.begin(), attr.end());
      }
    }

    void Compute(tensorflow::OpKernelContext* ctx) override {
      Tables<T> tables;
      OP_REQUIRES_OK(
          ctx, ForEachTable<Op>([&](auto i) {
            constexpr int kIndex = decltype(i)::value;
            TableView<TableEntryOf<Op, T, kIndex>> table{nullptr, 0, SourceKind::kPageableHost};
            TF_RETURN_IF_ERROR(
                std::get<kIndex>(this->tables_).HostValues(ctx, &table.values, &table.size));
            tables.Set(kIndex, table);
            return absl::OkStatus();
          }));
      typename Op::Shape shape;
      Outputs outputs;
      OP_REQUIRES_OK(ctx, this->PrepareOutputs(ctx, tables.Sizes(), &shape, &outputs));
      const T* x = static_cast<const T*>(ctx->input(0).data());
      if constexpr (kConverts && kOutputIsData<Op>) {  // an attr table converted once
        if (kFrom == TableFrom::kAttr) {
          const CpuWorkers workers{ctx};
          Op::template RunCpu<T>(this->params_, shape, x, outputs.As<T>(0), converted_.data(),
                                 static_cast<std::int64_t>(converted_.size()),
                                 KeepSubnormals<CpuWorkers>{workers});
          return;
        }
      }
      RunCpuOf<Op, T>(this->params_, shape, x, outputs, tables, CpuWorkers{ctx});
    }

   private:
    // A single table that RunCpu takes in the data's type (kCpuTableInDataType).
    static constexpr bool kConverts =
        !std::is_same<CpuTableEntryOf<Op, T>, TableEntryOf<Op, T>>::value;
    std::vector<CpuTableEntryOf<Op, T>> converted_;  // an attr table in the data's type
  };

#if CONSTMEM_WITH_GPU
  template <class T, TableFrom kFrom>
  class Gpu : public TableOpKernel<Op, T, kFrom> {
   public:
    using TableOpKernel<Op, T, kFrom>::TableOpKernel;

    void Compute(tensorflow::OpKernelContext* ctx) override {
      typename TableTypesOf<Op, T>::GpuArguments arguments;
      Tables<T> tables;
      OP_REQUIRES_OK(
          ctx, ForEachTable<Op>([&](auto i) {
            constexpr int kIndex = decltype(i)::value;
            auto place = [](std::int64_t count, SourceKind source) {
              return PlaceOf<Op, T>(kIndex, count, source);
            };
            auto& argument = std::get<kIndex>(arguments);
            TF_RETURN_IF_ERROR(std::get<kIndex>(this->tables_).PrepareGpu(ctx, place, &argument));
            tables.Set(kIndex, argument.view());
            return absl::OkStatus();
          }));
      typename Op::Shape shape;
      Outputs outputs;
      OP_REQUIRES_OK(ctx, this->PrepareOutputs(ctx, tables.Sizes(), &shape, &outputs));
      OP_REQUIRES_OK(ctx, LaunchOnComputeStream(ctx, [&](GpuStream stream) {
                       return LaunchOf<Op, T>(stream, this->params_, shape,
                                              static_cast<const T*>(ctx->input(0).data()), outputs,
                                              tables);
                     }));
    }
  };
#endif
};

// Registers Op's definitions and, unless another copy of the library has, its kernels.
template <class Op>
bool RegisterOneTableOp() {
  const std::string name = TfOpName(Op::kNames);
  constexpr bool kTableType = TakesNarrowData<Op>() && HasComputeTypeTable<Op>();
  const std::vector<TableSpec> tables = TableSpecs<Op>();
  RegisterTableOpDefs(
      {name, Op::kNames.data, tables, TfOutputSpecs<Op>(), TfTypeList<Op>(), kTableType,
       TakesDataType<Op>(DataType::kFloat64) || TakesDataType<Op>(DataType::kInt32),
       TfAttrSpecs(Op::kAttrs, Op::kAttrCount), Op::kDoc, InferTableOpShape<Op, TableFrom::kInput>,
       InferTableOpShape<Op, TableFrom::kAttr>});
  if (KernelsAlreadyRegistered(name.c_str())) return false;
  std::vector<const char*> inputs;
  for (const TableSpec& table : tables) inputs.push_back(table.name);
  auto kernels = [&](auto data, const char* device) {
    using T = decltype(data);
    using Table = std::conditional_t<kTableType, ComputeTypeOf<T>, void>;
#if CONSTMEM_WITH_GPU
    if (std::string(device) == tensorflow::DEVICE_GPU) {
      RegisterTableFormKernels<TableOpKernels<Op>::template Gpu, T, Table>(name, device, inputs);
      return;
    }
#endif
    RegisterTableFormKernels<TableOpKernels<Op>::template Cpu, T, Table>(name, device, inputs);
  };
  std::vector<const char*> devices{tensorflow::DEVICE_CPU};
#if CONSTMEM_WITH_GPU
  devices.push_back(tensorflow::DEVICE_GPU);
#endif
  for (const char* device : devices) {
    ForEachDataTypeOf<Op>([&](auto zero) { kernels(zero, device); });
  }
  return true;
}
template <class... Ops>
void RegisterTableOp() {
  (RegisterOneTableOp<Ops>(), ...);
}

#if CONSTMEM_WITH_XLA
// Op's XLA lowering into its FFI handlers, whose operands are the data and then each table in
// order: the result's shape and the custom call's attributes from the op's own description.
template <class Op>
XlaLowering TableOpLowering() {
  XlaLowering lowering;
  lowering.op = TfOpName(Op::kNames);
  lowering.target = std::string(Op::kNames.library) + "_" + Op::kNames.name;
  lowering.tables = TableSpecs<Op>();
  lowering.elementwise = Op::kElementwise;
  lowering.host_handler = &xla_ffi::TableHandlers<Op>::HostHandler;
#if CONSTMEM_WITH_GPU
  lowering.cuda_handler = &xla_ffi::TableHandlers<Op>::CudaHandler;
#endif
  lowering.describe = [](const tensorflow::NodeDef& node, tensorflow::DataType dtype,
                         const TableSizes& sizes, const std::vector<std::int64_t>& x,
                         std::vector<std::vector<std::int64_t>>* dims, std::string* attributes) {
    typename Op::Params params;
    TF_RETURN_IF_ERROR(ReadParams<Op>(NodeAttrs{node}, dtype, &params));
    typename Op::Shape shape;
    OutputDims y;
    TF_RETURN_IF_ERROR(ToTfStatus(OutputOf<Op>(x, params, sizes, &shape, y.data())));
    dims->assign(y.begin(), y.begin() + OutputCountOf<Op>());
    return XlaAttributes<Op>(NodeAttrs{node}, attributes);
  };
  return lowering;
}
template <class... Ops>
void RegisterTableOpLowering() {
  (RegisterXlaLowering(TableOpLowering<Ops>()), ...);
}
#endif

}  // namespace tf_adapter
}  // namespace constmem

// Registers the ops `...` (OpDescriptions) when the library loads.
#define CONSTMEM_REGISTER_TABLE_OP(...)                                            \
  [[maybe_unused]] static const bool CONSTMEM_REGISTER_KERNELS_NAME(__COUNTER__) = \
      (::constmem::tf_adapter::RegisterTableOp<__VA_ARGS__>(), true)

// Registers the XLA lowerings of the ops `...` when the library loads; nothing in a library
// without XLA lowerings.
#if CONSTMEM_WITH_XLA
#define CONSTMEM_REGISTER_TABLE_OP_XLA(...)                                        \
  [[maybe_unused]] static const bool CONSTMEM_REGISTER_KERNELS_NAME(__COUNTER__) = \
      (::constmem::tf_adapter::RegisterTableOpLowering<__VA_ARGS__>(), true)
#else
#define CONSTMEM_REGISTER_TABLE_OP_XLA(...) static_assert(true, "")
#endif

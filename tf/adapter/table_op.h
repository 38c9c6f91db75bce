// SPDX-License-Identifier: Apache-2.0
// An op's TensorFlow binding, made from its description (constmem/op_description.hpp): its op
// definitions in the three table forms (with shape functions), its CPU and GPU kernels for
// float32 and float64 data (and uint8 data with a float32 table, for ops that take it), their
// registration and (xla/xla_lowering.h) its XLA lowering:
//
//   CONSTMEM_REGISTER_TABLE_OP(my::ScaleOp);
//   CONSTMEM_REGISTER_TABLE_OP_XLA(my::ScaleOp);  // optional: under tf.function(jit_compile=True)
//
// The forms are `My>Scale` (the table an input), `My>ScaleHostTable` (an input in host memory)
// and `My>ScaleAttr` (fixed per node). An attribute of kind choice is a string attr of those
// values, one of kind float64 an int attr holding its IEEE-754 bits, one of kind int64 an int
// attr. In Python, constmem.tensorflow.TableOp runs the form a caller picks.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
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

// A data type as an op's Params read it.
inline DataType ToDataType(tensorflow::DataType dtype) {
  if (dtype == tensorflow::DT_DOUBLE) return DataType::kFloat64;
  if (dtype == tensorflow::DT_UINT8) return DataType::kUint8;
  return DataType::kFloat32;
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

// y's shape and the launch's Shape from x's, by the op's Output.
template <class Op>
absl::Status OutputShape(const tensorflow::TensorShape& x, const typename Op::Params& params,
                         std::int64_t table_size, typename Op::Shape* shape,
                         tensorflow::TensorShape* y) {
  const auto sizes = x.dim_sizes();
  Dims y_dims;
  TF_RETURN_IF_ERROR(
      ToTfStatus(Op::Output(Dims(sizes.begin(), sizes.end()), params, table_size, shape, &y_dims)));
  return tensorflow::TensorShape::BuildTensorShape(y_dims, y);
}

// Registers the op definitions of the three forms (not the kernels).
struct TableOpDef {
  std::string name;
  std::string data;
  std::string table;
  std::string output;
  bool int32_table;
  bool float64;
  bool uint8;  // uint8 data too: the table inputs' type is the attr Ttable (float or double)
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

// The size of an attr table, after checking its length and values.
template <class Op, class Context>
absl::Status AttrTableSize(Context* c, tensorflow::DataType dtype, std::int64_t* size) {
  auto read = [&](auto zero) {
    std::vector<decltype(zero)> values;
    absl::Status status =
        ReadAttrTable(c, Op::kNames.table, Op::kTable.max_size, &values, Op::kTable.min_size);
    *size = static_cast<std::int64_t>(values.size());
    return status;
  };
  if constexpr (Op::kTable.int32) return read(std::int32_t{});
  return dtype == tensorflow::DT_DOUBLE ? read(double{}) : read(float{});
}

template <class Op, TableFrom kFrom>
absl::Status InferTableOpShape(tensorflow::shape_inference::InferenceContext* c) {
  TF_RETURN_IF_ERROR(InferElementCount(c, 0, Op::kNames.data, Op::kMaxElements));
  tensorflow::DataType dtype;
  TF_RETURN_IF_ERROR(c->GetAttr("T", &dtype));
  std::int64_t size = kUnknownDim;
  if (kFrom == TableFrom::kAttr) {
    TF_RETURN_IF_ERROR(AttrTableSize<Op>(c, dtype, &size));
  } else {
    if constexpr (Op::kUint8 && !Op::kTable.int32) {  // the table's type is Ttable: the data's
      tensorflow::DataType table_type;                // compute type
      TF_RETURN_IF_ERROR(c->GetAttr("Ttable", &table_type));
      const tensorflow::DataType expected =
          dtype == tensorflow::DT_DOUBLE ? tensorflow::DT_DOUBLE : tensorflow::DT_FLOAT;
      if (table_type != expected) {
        return absl::InvalidArgumentError(
            std::string(Op::kNames.table) + " must be " + tensorflow::DataTypeString(expected) +
            " for " + Op::kNames.data + " of " + tensorflow::DataTypeString(dtype) + "; got " +
            tensorflow::DataTypeString(table_type));
      }
    }
    TF_RETURN_IF_ERROR(
        InferTableShape(c, 1, Op::kNames.table, Op::kTable.max_size, Op::kTable.min_size));
    const tensorflow::shape_inference::ShapeHandle table = c->input(1);
    if (c->RankKnown(table) && c->ValueKnown(c->Dim(table, 0))) size = c->Value(c->Dim(table, 0));
  }
  typename Op::Params params;
  TF_RETURN_IF_ERROR(ReadParams<Op>(*c, dtype, &params));
  const tensorflow::shape_inference::ShapeHandle x = c->input(0);
  if (!c->RankKnown(x)) {
    c->set_output(0, Op::kElementwise ? x : c->UnknownShape());
    return absl::OkStatus();
  }
  Dims x_dims(c->Rank(x));
  for (int d = 0; d < c->Rank(x); ++d) x_dims[d] = c->Value(c->Dim(x, d));
  typename Op::Shape shape;
  Dims y_dims;
  TF_RETURN_IF_ERROR(ToTfStatus(Op::Output(x_dims, params, size, &shape, &y_dims)));
  if (Op::kElementwise) {  // the input's own handle keeps what TensorFlow knows of its dimensions
    c->set_output(0, x);
    return absl::OkStatus();
  }
  std::vector<tensorflow::shape_inference::DimensionHandle> dims;
  for (std::size_t d = 0; d < y_dims.size(); ++d) {
    dims.push_back(y_dims[d] == x_dims[d] ? c->Dim(x, static_cast<std::int64_t>(d))
                                          : c->MakeDim(y_dims[d] < 0 ? -1 : y_dims[d]));
  }
  c->set_output(0, c->MakeShape(dims));
  return absl::OkStatus();
}

// What the CPU and GPU kernels of one form share: the attrs, the table operand, the output.
template <class Op, class T, TableFrom kFrom>
class TableOpKernel : public tensorflow::OpKernel {
 public:
  explicit TableOpKernel(tensorflow::OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadParams<Op>(*ctx, tensorflow::DataTypeToEnum<T>::value, &params_));
    OP_REQUIRES_OK(ctx, table_.Init(ctx, kFrom, 1, Op::kNames.table, Op::kTable.max_size,
                                    Op::kTable.min_size));
  }

 protected:
  using Entry = TableEntryOf<Op, T>;

  // Checks x and the table's size against the attrs, works out the shape, allocates y.
  absl::Status PrepareOutput(tensorflow::OpKernelContext* ctx, std::int64_t table_size,
                             typename Op::Shape* shape, tensorflow::Tensor** output) const {
    const tensorflow::TensorShape& x = ctx->input(0).shape();
    TF_RETURN_IF_ERROR(CheckElementCount(x, Op::kNames.data, Op::kMaxElements));
    tensorflow::TensorShape y;
    TF_RETURN_IF_ERROR(OutputShape<Op>(x, params_, table_size, shape, &y));
    if (Op::kElementwise) return ctx->forward_input_or_allocate_output({0}, 0, y, output);
    return ctx->allocate_output(0, y, output);
  }

  typename Op::Params params_;
  TableOperand<Entry> table_;
};

template <class Op>
struct TableOpKernels {
  template <class T, TableFrom kFrom>
  class Cpu : public TableOpKernel<Op, T, kFrom> {
   public:
    explicit Cpu(tensorflow::OpKernelConstruction* ctx) : TableOpKernel<Op, T, kFrom>(ctx) {
      if constexpr (kConverts) {
        const auto& attr = this->table_.attr_values();
        converted_.assign(attr.begin(), attr.end());
      }
    }

    void Compute(tensorflow::OpKernelContext* ctx) override {
      const typename Cpu::Entry* table = nullptr;
      std::int64_t size = 0;
      OP_REQUIRES_OK(ctx, this->table_.HostValues(ctx, &table, &size));
      typename Op::Shape shape;
      tensorflow::Tensor* output = nullptr;
      OP_REQUIRES_OK(ctx, this->PrepareOutput(ctx, size, &shape, &output));
      const CpuEntry* entries = nullptr;
      std::vector<CpuEntry> per_call;
      if constexpr (!kConverts) {
        entries = table;
      } else if (kFrom == TableFrom::kAttr) {
        entries = converted_.data();
      } else {
        per_call.assign(table, table + size);
        entries = per_call.data();
      }
      Op::template RunCpu<T>(this->params_, shape, ctx->input(0).flat<T>().data(),
                             output->flat<T>().data(), entries, size, CpuWorkers{ctx});
    }

   private:
    using CpuEntry = CpuTableEntryOf<Op, T>;
    static constexpr bool kConverts = !std::is_same<CpuEntry, typename Cpu::Entry>::value;
    std::vector<CpuEntry> converted_;  // an attr table in the data's type
  };

#if CONSTMEM_WITH_GPU
  template <class T, TableFrom kFrom>
  class Gpu : public TableOpKernel<Op, T, kFrom> {
   public:
    using TableOpKernel<Op, T, kFrom>::TableOpKernel;

    void Compute(tensorflow::OpKernelContext* ctx) override {
      GpuTableArgument<typename Gpu::Entry> table;
      OP_REQUIRES_OK(ctx, this->table_.PrepareGpu(ctx, &Op::template Place<T>, &table));
      typename Op::Shape shape;
      tensorflow::Tensor* output = nullptr;
      OP_REQUIRES_OK(ctx, this->PrepareOutput(ctx, table.view().size, &shape, &output));
      OP_REQUIRES_OK(ctx, LaunchOnComputeStream(ctx, [&](GpuStream stream) {
                       return Op::template Launch<T>(stream, this->params_, shape,
                                                     ctx->input(0).flat<T>().data(),
                                                     output->flat<T>().data(), table.view());
                     }));
    }
  };
#endif
};

// Registers Op's definitions and, unless another copy of the library has, its kernels.
template <class Op>
bool RegisterOneTableOp() {
  const std::string name = TfOpName(Op::kNames);
  constexpr bool kTableAttr = Op::kUint8 && !Op::kTable.int32;  // the table's type is Ttable
  RegisterTableOpDefs({name, Op::kNames.data, Op::kNames.table, "y", Op::kTable.int32, Op::kFloat64,
                       kTableAttr, TfAttrSpecs(Op::kAttrs, Op::kAttrCount), Op::kDoc,
                       InferTableOpShape<Op, TableFrom::kInput>,
                       InferTableOpShape<Op, TableFrom::kAttr>});
  if (KernelsAlreadyRegistered(name.c_str())) return false;
  auto kernels = [&](auto data, const char* device) {
    using T = decltype(data);
    using Table = std::conditional_t<kTableAttr, TableEntryOf<Op, T>, void>;
#if CONSTMEM_WITH_GPU
    if (std::string(device) == tensorflow::DEVICE_GPU) {
      RegisterTableFormKernels<TableOpKernels<Op>::template Gpu, T, Table>(name, device,
                                                                           Op::kNames.table);
      return;
    }
#endif
    RegisterTableFormKernels<TableOpKernels<Op>::template Cpu, T, Table>(name, device,
                                                                         Op::kNames.table);
  };
  std::vector<const char*> devices{tensorflow::DEVICE_CPU};
#if CONSTMEM_WITH_GPU
  devices.push_back(tensorflow::DEVICE_GPU);
#endif
  for (const char* device : devices) {
    kernels(float{}, device);
    if constexpr (Op::kFloat64) kernels(double{}, device);
    if constexpr (Op::kUint8) kernels(std::uint8_t{}, device);
  }
  return true;
}
template <class... Ops>
void RegisterTableOp() {
  (RegisterOneTableOp<Ops>(), ...);
}

#if CONSTMEM_WITH_XLA
// Op's XLA lowering into its FFI handlers: the result's shape and the custom call's attributes
// from the op's own description.
template <class Op>
XlaLowering TableOpLowering() {
  XlaLowering lowering;
  lowering.op = TfOpName(Op::kNames);
  lowering.target = std::string(Op::kNames.library) + "_" + Op::kNames.name;
  lowering.table_attr = Op::kNames.table;
  lowering.min_table = Op::kTable.min_size;
  lowering.max_table = Op::kTable.max_size;
  lowering.int32_table = Op::kTable.int32;
  lowering.elementwise = Op::kElementwise;
  lowering.host_handler = &xla_ffi::TableHandlers<Op>::HostHandler;
#if CONSTMEM_WITH_GPU
  lowering.cuda_handler = &xla_ffi::TableHandlers<Op>::CudaHandler;
#endif
  lowering.describe = [](const tensorflow::NodeDef& node, tensorflow::DataType dtype,
                         std::int64_t table_size, std::vector<std::int64_t>* dims,
                         std::string* attributes) {
    typename Op::Params params;
    TF_RETURN_IF_ERROR(ReadParams<Op>(NodeAttrs{node}, dtype, &params));
    typename Op::Shape shape;
    Dims y;
    TF_RETURN_IF_ERROR(ToTfStatus(Op::Output(*dims, params, table_size, &shape, &y)));
    *dims = y;
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

// SPDX-License-Identifier: Apache-2.0
// An op with one table, written once. From a struct that describes the op, the adapter makes its
// TensorFlow op definitions (the three table forms, with shape functions), its CPU and GPU kernels
// for float32 and float64 data, their registration and (xla/xla_lowering.h) its XLA lowering:
//
//   struct Scale : tf_adapter::TableOp {  // y = x * (g[0] + ... + g[n-1]): elementwise
//     static constexpr tf_adapter::TableOpNames kNames{"My>Scale", "x", "gains"};
//     static constexpr tf_adapter::TableOpLimits kLimits{1, 1024, std::int64_t{1} << 40};
//     static constexpr const char* kDoc = "y = x * sum(gains).";
//     template <class T, class Shard>  // on the CPU: shard(count, cost, fn(begin, end))
//     static void RunCpu(const Params&, const Shape& shape, const T* x, T* y, const T* gains,
//                        std::int64_t size, const Shard& shard);
//     template <class T>  // on the GPU: the op's CUDA launcher
//     static Status Launch(GpuStream stream, const Params&, const Shape& shape, const T* x, T* y,
//                          const TableView<T>& gains);
//     template <class T>
//     static Placement Place(std::int64_t size, SourceKind source);
//   };
//   CONSTMEM_REGISTER_TABLE_OP(Scale);
//   CONSTMEM_REGISTER_TABLE_OP_XLA(Scale, "my_scale", my_scale_host,  // optional: FFI handlers
//                                  CONSTMEM_XLA_CUDA_HANDLER(my_scale_cuda));
//
// The forms are `My>Scale` (the table an input), `My>ScaleHostTable` (an input in host memory)
// and `My>ScaleAttr` (fixed per node). TableOp's defaults make an elementwise op with no attr
// but the table; an op declares what differs: further attrs and what it reads from them
// (Params), another output shape (Shape, OutputShape, InferOutput), checks of the table against
// the attrs (CheckTable), int32 entries whatever the data's type (kInt32Table), float32 data
// alone (kFloat64 = false). In Python, constmem.tensorflow.TableOp runs the form a caller
// picks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "adapter/kernel_registration.h"
#include "adapter/table_adapter.h"
#include "adapter/xla/xla_lowering.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor_shape.h"
#include "tensorflow/core/framework/types.h"

namespace constmem {
namespace tf_adapter {

// An op's names: the op (its forms add "HostTable" and "Attr"), its data input, its table (an
// input, or an attr of that name) and its output.
struct TableOpNames {
  const char* op;
  const char* data;
  const char* table;
  const char* output = "y";
};

// How many entries the table takes (min_table to max_table) and elements the data.
struct TableOpLimits {
  std::int64_t min_table;
  std::int64_t max_table;
  std::int64_t max_elements;
};

// The defaults of an op's description; see above.
struct TableOp {
  // int32 entries, whatever the data's type (else entries of the data's type).
  static constexpr bool kInt32Table = false;
  // RunCpu takes the table converted to the data's type: an attr's once, when the kernel is built,
  // an input's per call (for an op that adds int32 entries in the data's type, as Frobulate).
  static constexpr bool kCpuTableInDataType = false;
  // Data of float64 as well as float32 (attr T: {float, double}); else float32 alone.
  static constexpr bool kFloat64 = true;
  // y[i] depends on x[i] alone: y may take x's buffer, and XLA may pass any dimension dynamic.
  // Otherwise the last axis is one unit (a row), as for a filter.
  static constexpr bool kElementwise = true;
  static constexpr const char* kDoc = "";
  // Attrs beyond T and the table, as REGISTER_OP's .Attr() specs.
  static std::vector<std::string> Attrs() { return {}; }
  // What the kernels, shape functions and XLA lowering read from those attrs. `attrs` has
  // GetAttr(name, &value), as OpKernelConstruction and InferenceContext do.
  struct Params {
    template <class Attrs>
    absl::Status Read(const Attrs&, tensorflow::DataType) {
      return absl::OkStatus();
    }
  };
  // What the CPU kernel and launcher need of the data's shape.
  struct Shape {
    std::int64_t elements = 0;
  };
  // Checks the table's size against the attrs.
  template <class P>
  static absl::Status CheckTable(const P&, std::int64_t /*size*/) {
    return absl::OkStatus();
  }
  // y's shape (and the launch's Shape) from x's, or an error for shapes the op refuses.
  template <class P, class S>
  static absl::Status OutputShape(const tensorflow::TensorShape& x, const P&, std::int64_t,
                                  S* shape, tensorflow::TensorShape* y) {
    shape->elements = x.num_elements();
    *y = x;
    return absl::OkStatus();
  }
  // The same at graph construction; `size` is -1 while the table's size is unknown.
  template <class P>
  static absl::Status InferOutput(tensorflow::shape_inference::InferenceContext* c, const P&,
                                  std::int64_t /*size*/) {
    c->set_output(0, c->input(0));
    return absl::OkStatus();
  }
  // The XLA custom call's attributes, an MLIR dictionary.
  template <class P>
  static std::string XlaAttributes(const P&) {
    return "{}";
  }
};

// The entries of Op's table for data of type T.
template <class Op, class T>
using TableEntry = std::conditional_t<Op::kInt32Table, std::int32_t, T>;

// Registers the op definitions of the three forms (not the kernels).
struct TableOpDef {
  std::string name;
  std::string data;
  std::string table;
  std::string output;
  bool int32_table;
  bool float64;
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
        ReadAttrTable(c, Op::kNames.table, Op::kLimits.max_table, &values, Op::kLimits.min_table);
    *size = static_cast<std::int64_t>(values.size());
    return status;
  };
  if constexpr (Op::kInt32Table) return read(std::int32_t{});
  return dtype == tensorflow::DT_FLOAT ? read(float{}) : read(double{});
}

template <class Op, TableFrom kFrom>
absl::Status InferTableOpShape(tensorflow::shape_inference::InferenceContext* c) {
  TF_RETURN_IF_ERROR(InferElementCount(c, 0, Op::kNames.data, Op::kLimits.max_elements));
  tensorflow::DataType dtype;
  TF_RETURN_IF_ERROR(c->GetAttr("T", &dtype));
  std::int64_t size = -1;
  if (kFrom == TableFrom::kAttr) {
    TF_RETURN_IF_ERROR(AttrTableSize<Op>(c, dtype, &size));
  } else {
    TF_RETURN_IF_ERROR(
        InferTableShape(c, 1, Op::kNames.table, Op::kLimits.max_table, Op::kLimits.min_table));
    const tensorflow::shape_inference::ShapeHandle table = c->input(1);
    if (c->RankKnown(table) && c->ValueKnown(c->Dim(table, 0))) size = c->Value(c->Dim(table, 0));
  }
  typename Op::Params params;
  TF_RETURN_IF_ERROR(params.Read(*c, dtype));
  if (size >= 0) TF_RETURN_IF_ERROR(Op::CheckTable(params, size));
  return Op::InferOutput(c, params, size);
}

// What the CPU and GPU kernels of one form share: the attrs, the table operand, the output.
template <class Op, class T, TableFrom kFrom>
class TableOpKernel : public tensorflow::OpKernel {
 public:
  explicit TableOpKernel(tensorflow::OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, params_.Read(*ctx, tensorflow::DataTypeToEnum<T>::value));
    OP_REQUIRES_OK(ctx, table_.Init(ctx, kFrom, 1, Op::kNames.table, Op::kLimits.max_table,
                                    Op::kLimits.min_table));
  }

 protected:
  using Entry = TableEntry<Op, T>;

  // Checks x and the table's size against the attrs, works out the shape, allocates y.
  absl::Status PrepareOutput(tensorflow::OpKernelContext* ctx, std::int64_t table_size,
                             typename Op::Shape* shape, tensorflow::Tensor** output) const {
    TF_RETURN_IF_ERROR(Op::CheckTable(params_, table_size));
    const tensorflow::TensorShape& x = ctx->input(0).shape();
    TF_RETURN_IF_ERROR(CheckElementCount(x, Op::kNames.data, Op::kLimits.max_elements));
    tensorflow::TensorShape y;
    TF_RETURN_IF_ERROR(Op::OutputShape(x, params_, table_size, shape, &y));
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
    using CpuEntry = std::conditional_t<Op::kCpuTableInDataType, T, typename Cpu::Entry>;
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
bool RegisterTableOp() {
  RegisterTableOpDefs({Op::kNames.op, Op::kNames.data, Op::kNames.table, Op::kNames.output,
                       Op::kInt32Table, Op::kFloat64, Op::Attrs(), Op::kDoc,
                       InferTableOpShape<Op, TableFrom::kInput>,
                       InferTableOpShape<Op, TableFrom::kAttr>});
  if (KernelsAlreadyRegistered(Op::kNames.op)) return false;
  RegisterTableFormKernels<TableOpKernels<Op>::template Cpu, float>(
      Op::kNames.op, tensorflow::DEVICE_CPU, Op::kNames.table);
  if constexpr (Op::kFloat64) {
    RegisterTableFormKernels<TableOpKernels<Op>::template Cpu, double>(
        Op::kNames.op, tensorflow::DEVICE_CPU, Op::kNames.table);
  }
#if CONSTMEM_WITH_GPU
  RegisterTableFormKernels<TableOpKernels<Op>::template Gpu, float>(
      Op::kNames.op, tensorflow::DEVICE_GPU, Op::kNames.table);
  if constexpr (Op::kFloat64) {
    RegisterTableFormKernels<TableOpKernels<Op>::template Gpu, double>(
        Op::kNames.op, tensorflow::DEVICE_GPU, Op::kNames.table);
  }
#endif
  return true;
}

}  // namespace tf_adapter
}  // namespace constmem

// Registers the op that `Op` (a TableOp) describes, when the library loads.
#define CONSTMEM_REGISTER_TABLE_OP(Op)                                             \
  [[maybe_unused]] static const bool CONSTMEM_REGISTER_KERNELS_NAME(__COUNTER__) = \
      ::constmem::tf_adapter::RegisterTableOp<Op>()

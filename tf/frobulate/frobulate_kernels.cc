// SPDX-License-Identifier: Apache-2.0
// Frobulate's kernels: CPU kernels over TensorFlow's thread pool, and GPU kernels (compiled by
// g++) that hand TensorFlow's stream and the prepared table to the CUDA launcher.
#include <cstdint>
#include <vector>

#include "adapter/kernel_registration.h"
#include "adapter/table_adapter.h"
#include "frobulate/frobulate_cpu.h"
#include "frobulate/frobulate_functor.h"
#include "frobulate/frobulate_launcher.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/register_types.h"

namespace constmem {
namespace ops {
namespace {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::register_kernel::Name;

using tf_adapter::TableFrom;

absl::Status PrepareOutput(OpKernelContext* ctx, Tensor** output) {
  return tf_adapter::ForwardOrAllocateElementwiseOutput(ctx, 0, "data", kFrobulateMaxElements,
                                                        output);
}

template <class T, TableFrom kFrom>
class FrobulateCpuKernel : public OpKernel {
 public:
  explicit FrobulateCpuKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, table_.Init(ctx, kFrom, 1, "table", kFrobulateMaxTableSize));
    // The kernel adds entries converted to T: an attr table is converted once, here.
    attr_table_.assign(table_.attr_values().begin(), table_.attr_values().end());
  }

  void Compute(OpKernelContext* ctx) override {
    std::vector<T> input_table;
    const std::vector<T>* table = &attr_table_;
    if (kFrom == TableFrom::kInput) {
      const std::int32_t* entries = nullptr;
      std::int64_t size = 0;
      OP_REQUIRES_OK(ctx, table_.HostValues(ctx, &entries, &size));
      input_table.assign(entries, entries + size);
      table = &input_table;
    }
    Tensor* output = nullptr;
    OP_REQUIRES_OK(ctx, PrepareOutput(ctx, &output));
    const T* data = ctx->input(0).flat<T>().data();
    T* out = output->flat<T>().data();
    const std::int64_t table_size = static_cast<std::int64_t>(table->size());
    tf_adapter::ShardOnCpuWorkers(ctx, output->NumElements(), /*cost_per_element=*/table_size + 2,
                                  [&](std::int64_t begin, std::int64_t end) {
                                    FrobulateCpuRange(data, out, begin, end, table->data(),
                                                      table_size);
                                  });
  }

 private:
  tf_adapter::TableOperand<std::int32_t> table_;
  std::vector<T> attr_table_;
};

#if CONSTMEM_WITH_GPU

template <class T, TableFrom kFrom>
class FrobulateGpuKernel : public OpKernel {
 public:
  explicit FrobulateGpuKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, table_.Init(ctx, kFrom, 1, "table", kFrobulateMaxTableSize));
  }

  void Compute(OpKernelContext* ctx) override {
    tf_adapter::GpuTableArgument<std::int32_t> table;
    OP_REQUIRES_OK(ctx, table_.PrepareGpu(ctx, FrobulatePlacement, &table));
    Tensor* output = nullptr;
    OP_REQUIRES_OK(ctx, PrepareOutput(ctx, &output));
    OP_REQUIRES_OK(ctx, tf_adapter::LaunchOnComputeStream(ctx, [&](GpuStream stream) {
                     return LaunchFrobulate<T>(stream, ctx->input(0).flat<T>().data(),
                                               output->flat<T>().data(), output->NumElements(),
                                               table.view());
                   }));
  }

 private:
  tf_adapter::TableOperand<std::int32_t> table_;
};

#endif  // CONSTMEM_WITH_GPU

}  // namespace
}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_FLOAT_TABLE_OP("Constmem>Frobulate", "table", constmem::ops::FrobulateCpuKernel,
                                 constmem::ops::FrobulateGpuKernel);

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
#include "tensorflow/core/util/work_sharder.h"

namespace constmem {
namespace ops {
namespace {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::register_kernel::Name;

using tf_adapter::TableFrom;

// Allocates the output after checking data, reusing data's buffer when nothing else reads it (as
// TensorFlow's elementwise ops do); returns false when the op already failed.
bool PrepareOutput(OpKernelContext* ctx, Tensor** output) {
  const Tensor& data = ctx->input(0);
  absl::Status status = tf_adapter::CheckElementCount(data.shape(), "data", kFrobulateMaxElements);
  if (status.ok()) status = ctx->forward_input_or_allocate_output({0}, 0, data.shape(), output);
  if (!status.ok()) ctx->SetStatus(status);
  return status.ok();
}

template <class T, TableFrom kFrom>
class FrobulateCpuKernel : public OpKernel {
 public:
  explicit FrobulateCpuKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, table_.Init(ctx, kFrom, 1, "table", kFrobulateMaxTableSize));
  }

  void Compute(OpKernelContext* ctx) override {
    const std::int32_t* entries = nullptr;
    std::int64_t table_size = 0;
    OP_REQUIRES_OK(ctx, table_.HostValues(ctx, &entries, &table_size));
    // The kernel adds entries converted to T: converted once per call (cheap next to the data).
    const std::vector<T> table(entries, entries + table_size);
    Tensor* output = nullptr;
    if (!PrepareOutput(ctx, &output)) return;
    const T* data = ctx->input(0).flat<T>().data();
    T* out = output->flat<T>().data();
    auto* workers = ctx->device()->tensorflow_cpu_worker_threads()->workers;
    tensorflow::Shard(workers->NumThreads(), workers, output->NumElements(),
                      /*cost_per_unit=*/table_size + 2, [&](std::int64_t begin, std::int64_t end) {
                        FrobulateCpuRange(data, out, begin, end, table.data(), table_size);
                      });
  }

 private:
  tf_adapter::TableOperand<std::int32_t> table_;
};

template <class T>
void RegisterFrobulateCpuKernels() {
  using tf_adapter::RegisterKernel;
  RegisterKernel<FrobulateCpuKernel<T, TableFrom::kInput>>(
      Name("Constmem>Frobulate").Device(tensorflow::DEVICE_CPU).TypeConstraint<T>("T"));
  RegisterKernel<FrobulateCpuKernel<T, TableFrom::kInput>>(
      Name("Constmem>FrobulateHostTable").Device(tensorflow::DEVICE_CPU).TypeConstraint<T>("T"));
  RegisterKernel<FrobulateCpuKernel<T, TableFrom::kAttr>>(
      Name("Constmem>FrobulateAttr").Device(tensorflow::DEVICE_CPU).TypeConstraint<T>("T"));
}

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
    if (!PrepareOutput(ctx, &output)) return;
    OP_REQUIRES_OK(ctx, tf_adapter::LaunchOnComputeStream(ctx, [&](GpuStream stream) {
                     return LaunchFrobulate<T>(stream, ctx->input(0).flat<T>().data(),
                                               output->flat<T>().data(), output->NumElements(),
                                               table.view());
                   }));
  }

 private:
  tf_adapter::TableOperand<std::int32_t> table_;
};

template <class T>
void RegisterFrobulateGpuKernels() {
  using tf_adapter::RegisterKernel;
  RegisterKernel<FrobulateGpuKernel<T, TableFrom::kInput>>(
      Name("Constmem>Frobulate").Device(tensorflow::DEVICE_GPU).TypeConstraint<T>("T"));
  RegisterKernel<FrobulateGpuKernel<T, TableFrom::kInput>>(Name("Constmem>FrobulateHostTable")
                                                               .Device(tensorflow::DEVICE_GPU)
                                                               .TypeConstraint<T>("T")
                                                               .HostMemory("table"));
  RegisterKernel<FrobulateGpuKernel<T, TableFrom::kAttr>>(
      Name("Constmem>FrobulateAttr").Device(tensorflow::DEVICE_GPU).TypeConstraint<T>("T"));
}

#endif  // CONSTMEM_WITH_GPU

}  // namespace
}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_KERNELS("Constmem>Frobulate", {
  constmem::ops::RegisterFrobulateCpuKernels<float>();
  constmem::ops::RegisterFrobulateCpuKernels<double>();
#if CONSTMEM_WITH_GPU
  constmem::ops::RegisterFrobulateGpuKernels<float>();
  constmem::ops::RegisterFrobulateGpuKernels<double>();
#endif
});

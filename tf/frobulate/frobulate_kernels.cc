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

enum class TableFrom { kInput, kAttr };

// Reads the table attr once, at kernel construction; a bad attr fails the first run.
absl::Status ReadTableAttr(OpKernelConstruction* ctx, std::vector<std::int32_t>* table) {
  TF_RETURN_IF_ERROR(ctx->GetAttr("table", table));
  return tf_adapter::ValidateTableSize(static_cast<std::int64_t>(table->size()), "table",
                                       kFrobulateMaxTableSize);
}

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
    if (kFrom == TableFrom::kAttr) {
      std::vector<std::int32_t> table;
      OP_REQUIRES_OK(ctx, ReadTableAttr(ctx, &table));
      attr_table_.assign(table.begin(), table.end());
    }
  }

  void Compute(OpKernelContext* ctx) override {
    // The kernel adds entries converted to T; an input table is converted once per call.
    std::vector<T> input_table;
    const std::vector<T>* table = &attr_table_;
    if (kFrom == TableFrom::kInput) {
      const Tensor& input = ctx->input(1);
      OP_REQUIRES_OK(
          ctx, tf_adapter::ValidateTableShape(input.shape(), "table", kFrobulateMaxTableSize));
      const auto entries = input.flat<std::int32_t>();
      input_table.assign(entries.data(), entries.data() + entries.size());
      table = &input_table;
    }
    Tensor* output = nullptr;
    if (!PrepareOutput(ctx, &output)) return;
    const T* data = ctx->input(0).flat<T>().data();
    T* out = output->flat<T>().data();
    const std::int64_t table_size = static_cast<std::int64_t>(table->size());
    auto* workers = ctx->device()->tensorflow_cpu_worker_threads()->workers;
    tensorflow::Shard(workers->NumThreads(), workers, output->NumElements(),
                      /*cost_per_unit=*/table_size + 2, [&](std::int64_t begin, std::int64_t end) {
                        FrobulateCpuRange(data, out, begin, end, table->data(), table_size);
                      });
  }

 private:
  std::vector<T> attr_table_;
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

Placement Placer(std::int64_t size, SourceKind source) { return FrobulatePlacement(size, source); }

template <class T, TableFrom kFrom>
class FrobulateGpuKernel : public OpKernel {
 public:
  explicit FrobulateGpuKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    if (kFrom == TableFrom::kAttr) OP_REQUIRES_OK(ctx, ReadTableAttr(ctx, &attr_table_));
  }

  void Compute(OpKernelContext* ctx) override {
    tf_adapter::GpuTableArgument<std::int32_t> table;
    if (kFrom == TableFrom::kInput) {
      OP_REQUIRES_OK(ctx, table.PrepareInput(ctx, 1, "table", kFrobulateMaxTableSize, Placer));
    } else {
      OP_REQUIRES_OK(ctx, table.PrepareHostValues(attr_table_.data(),
                                                  static_cast<std::int64_t>(attr_table_.size()),
                                                  "table", kFrobulateMaxTableSize));
    }
    Tensor* output = nullptr;
    if (!PrepareOutput(ctx, &output)) return;
    const GpuStream stream = tf_adapter::ComputeStream(ctx);
    // Null would be the legacy default stream, which synchronises with everything: never use it.
    OP_REQUIRES(ctx, stream != nullptr,
                absl::FailedPreconditionError("constmem: TensorFlow gave no CUDA compute stream"));
    OP_REQUIRES_OK(ctx, tf_adapter::ToTfStatus(LaunchFrobulate<T>(
                            stream, ctx->input(0).flat<T>().data(), output->flat<T>().data(),
                            output->NumElements(), table.view())));
    table.KeepAliveUntilStreamPasses(ctx);
  }

 private:
  std::vector<std::int32_t> attr_table_;
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

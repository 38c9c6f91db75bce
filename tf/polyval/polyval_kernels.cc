// SPDX-License-Identifier: Apache-2.0
// Polyval's kernels: the CPU kernel over TensorFlow's thread pool, and the GPU kernel (compiled by
// g++) that hands TensorFlow's stream and the prepared coefficients to the CUDA launcher.
#include <cstdint>

#include "adapter/kernel_registration.h"
#include "adapter/table_adapter.h"
#include "polyval/polyval_cpu.h"
#include "polyval/polyval_functor.h"
#include "polyval/polyval_launcher.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace constmem {
namespace ops {
namespace {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tf_adapter::TableFrom;

absl::Status PrepareOutput(OpKernelContext* ctx, Tensor** output) {
  return tf_adapter::ForwardOrAllocateElementwiseOutput(ctx, 0, "x", kPolyvalMaxElements, output);
}

template <class T, TableFrom kFrom>
class PolyvalCpuKernel : public OpKernel {
 public:
  explicit PolyvalCpuKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, coeffs_.Init(ctx, kFrom, 1, "coeffs", kPolyvalMaxCoefficients));
  }

  void Compute(OpKernelContext* ctx) override {
    const T* coeffs = nullptr;
    std::int64_t count = 0;
    OP_REQUIRES_OK(ctx, coeffs_.HostValues(ctx, &coeffs, &count));
    Tensor* output = nullptr;
    OP_REQUIRES_OK(ctx, PrepareOutput(ctx, &output));
    const T* x = ctx->input(0).flat<T>().data();
    T* y = output->flat<T>().data();
    tf_adapter::ShardOnCpuWorkers(ctx, output->NumElements(), /*cost_per_element=*/count + 2,
                                  [&](std::int64_t begin, std::int64_t end) {
                                    PolyvalCpuRange(x, y, begin, end, coeffs, count);
                                  });
  }

 private:
  tf_adapter::TableOperand<T> coeffs_;
};

#if CONSTMEM_WITH_GPU

template <class T, TableFrom kFrom>
class PolyvalGpuKernel : public OpKernel {
 public:
  explicit PolyvalGpuKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, coeffs_.Init(ctx, kFrom, 1, "coeffs", kPolyvalMaxCoefficients));
  }

  void Compute(OpKernelContext* ctx) override {
    tf_adapter::GpuTableArgument<T> coeffs;
    OP_REQUIRES_OK(ctx, coeffs_.PrepareGpu(ctx, PolyvalPlacement<T>, &coeffs));
    Tensor* output = nullptr;
    OP_REQUIRES_OK(ctx, PrepareOutput(ctx, &output));
    OP_REQUIRES_OK(ctx, tf_adapter::LaunchOnComputeStream(ctx, [&](GpuStream stream) {
                     return LaunchPolyval<T>(stream, ctx->input(0).flat<T>().data(),
                                             output->flat<T>().data(), output->NumElements(),
                                             coeffs.view());
                   }));
  }

 private:
  tf_adapter::TableOperand<T> coeffs_;
};

#endif  // CONSTMEM_WITH_GPU

}  // namespace
}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_FLOAT_TABLE_OP("Constmem>Polyval", "coeffs", constmem::ops::PolyvalCpuKernel,
                                 constmem::ops::PolyvalGpuKernel);

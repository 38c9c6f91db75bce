// SPDX-License-Identifier: Apache-2.0
// Interpolate's kernels: the CPU kernel over TensorFlow's thread pool, and the GPU kernel (compiled
// by g++) that hands TensorFlow's stream and the prepared knots to the CUDA launcher.
#include <cstdint>
#include <vector>

#include "adapter/kernel_registration.h"
#include "adapter/table_adapter.h"
#include "interpolate/interpolate_cpu.h"
#include "interpolate/interpolate_functor.h"
#include "interpolate/interpolate_launcher.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace constmem {
namespace ops {
namespace {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tf_adapter::TableFrom;

// What both kernels read when they are built: the knots operand and [lo, hi].
template <class T>
struct InterpolateOperands {
  absl::Status Init(OpKernelConstruction* ctx, TableFrom from) {
    std::vector<T> bounds;
    TF_RETURN_IF_ERROR(tf_adapter::ReadAttrTable(ctx, "bounds", 2, &bounds, 2));
    lo = bounds[0];
    hi = bounds[1];
    return knots.Init(ctx, from, 1, "knots", kInterpolateMaxKnots, kInterpolateMinKnots);
  }
  tf_adapter::TableOperand<T> knots;
  double lo = 0;
  double hi = 1;
};

absl::Status PrepareOutput(OpKernelContext* ctx, Tensor** output) {
  return tf_adapter::ForwardOrAllocateElementwiseOutput(ctx, 0, "x", kInterpolateMaxElements,
                                                        output);
}

template <class T, TableFrom kFrom>
class InterpolateCpuKernel : public OpKernel {
 public:
  explicit InterpolateCpuKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, operands_.Init(ctx, kFrom));
  }

  void Compute(OpKernelContext* ctx) override {
    const T* knots = nullptr;
    std::int64_t count = 0;
    OP_REQUIRES_OK(ctx, operands_.knots.HostValues(ctx, &knots, &count));
    InterpolateGrid<T> grid{};
    OP_REQUIRES_OK(ctx, tf_adapter::ToTfStatus(
                            MakeInterpolateGrid<T>(operands_.lo, operands_.hi, count, &grid)));
    Tensor* output = nullptr;
    OP_REQUIRES_OK(ctx, PrepareOutput(ctx, &output));
    const T* x = ctx->input(0).flat<T>().data();
    T* y = output->flat<T>().data();
    tf_adapter::ShardOnCpuWorkers(ctx, output->NumElements(), /*cost_per_element=*/8,
                                  [&](std::int64_t begin, std::int64_t end) {
                                    InterpolateCpuRange(x, y, begin, end, knots, grid);
                                  });
  }

 private:
  InterpolateOperands<T> operands_;
};

#if CONSTMEM_WITH_GPU

template <class T, TableFrom kFrom>
class InterpolateGpuKernel : public OpKernel {
 public:
  explicit InterpolateGpuKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, operands_.Init(ctx, kFrom));
  }

  void Compute(OpKernelContext* ctx) override {
    tf_adapter::GpuTableArgument<T> knots;
    OP_REQUIRES_OK(ctx, operands_.knots.PrepareGpu(ctx, InterpolatePlacement<T>, &knots));
    Tensor* output = nullptr;
    OP_REQUIRES_OK(ctx, PrepareOutput(ctx, &output));
    OP_REQUIRES_OK(ctx, tf_adapter::LaunchOnComputeStream(ctx, [&](GpuStream stream) {
                     return LaunchInterpolate<T>(stream, ctx->input(0).flat<T>().data(),
                                                 output->flat<T>().data(), output->NumElements(),
                                                 knots.view(), operands_.lo, operands_.hi);
                   }));
  }

 private:
  InterpolateOperands<T> operands_;
};

#endif  // CONSTMEM_WITH_GPU

}  // namespace
}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_FLOAT_TABLE_OP("Constmem>Interpolate", "knots",
                                 constmem::ops::InterpolateCpuKernel,
                                 constmem::ops::InterpolateGpuKernel);

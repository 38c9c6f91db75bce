// SPDX-License-Identifier: Apache-2.0
// FirFilter's kernels: the CPU kernel over TensorFlow's thread pool, and the GPU kernel (compiled
// by g++) that hands TensorFlow's stream and the prepared taps to the CUDA launcher.
#include <cstdint>
#include <string>

#include "adapter/kernel_registration.h"
#include "adapter/table_adapter.h"
#include "fir_filter/fir_filter_cpu.h"
#include "fir_filter/fir_filter_functor.h"
#include "fir_filter/fir_filter_launcher.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace constmem {
namespace ops {
namespace {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tf_adapter::TableFrom;

absl::Status ReadPadding(OpKernelConstruction* ctx, FirPadding* padding) {
  std::string name;
  TF_RETURN_IF_ERROR(ctx->GetAttr("padding", &name));
  *padding = name == "VALID" ? FirPadding::kValid : FirPadding::kSame;
  return absl::OkStatus();
}

// Checks x, works out the shape of the filter and allocates y.
absl::Status PrepareOutput(OpKernelContext* ctx, FirPadding padding, std::int64_t taps,
                           FirShape* shape, Tensor** output) {
  const tensorflow::TensorShape& x = ctx->input(0).shape();
  if (x.dims() < 1) {
    return absl::InvalidArgumentError(
        "x must have rank 1 or more (the filter runs along the "
        "last axis); got a scalar");
  }
  TF_RETURN_IF_ERROR(tf_adapter::CheckElementCount(x, "x", kFirMaxElements));
  std::int64_t rows = 1;
  for (int d = 0; d + 1 < x.dims(); ++d) rows *= x.dim_size(d);
  *shape = MakeFirShape(rows, x.dim_size(x.dims() - 1), taps, padding);
  tensorflow::TensorShape y = x;
  TF_RETURN_IF_ERROR(y.SetDimWithStatus(x.dims() - 1, shape->outputs));
  return ctx->allocate_output(0, y, output);
}

template <class T, TableFrom kFrom>
class FirFilterCpuKernel : public OpKernel {
 public:
  explicit FirFilterCpuKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadPadding(ctx, &padding_));
    OP_REQUIRES_OK(ctx, taps_.Init(ctx, kFrom, 1, "taps", kFirMaxTaps));
  }

  void Compute(OpKernelContext* ctx) override {
    const T* taps = nullptr;
    std::int64_t count = 0;
    OP_REQUIRES_OK(ctx, taps_.HostValues(ctx, &taps, &count));
    FirShape shape;
    Tensor* output = nullptr;
    OP_REQUIRES_OK(ctx, PrepareOutput(ctx, padding_, count, &shape, &output));
    const T* x = ctx->input(0).flat<T>().data();
    T* y = output->flat<T>().data();
    tf_adapter::ShardOnCpuWorkers(ctx, output->NumElements(), /*cost_per_element=*/count + 2,
                                  [&](std::int64_t begin, std::int64_t end) {
                                    FirFilterCpuRange(x, y, shape, taps, begin, end);
                                  });
  }

 private:
  FirPadding padding_ = FirPadding::kSame;
  tf_adapter::TableOperand<T> taps_;
};

#if CONSTMEM_WITH_GPU

template <class T, TableFrom kFrom>
class FirFilterGpuKernel : public OpKernel {
 public:
  explicit FirFilterGpuKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadPadding(ctx, &padding_));
    OP_REQUIRES_OK(ctx, taps_.Init(ctx, kFrom, 1, "taps", kFirMaxTaps));
  }

  void Compute(OpKernelContext* ctx) override {
    tf_adapter::GpuTableArgument<T> taps;
    OP_REQUIRES_OK(ctx, taps_.PrepareGpu(ctx, FirFilterPlacement<T>, &taps));
    FirShape shape;
    Tensor* output = nullptr;
    OP_REQUIRES_OK(ctx, PrepareOutput(ctx, padding_, taps.view().size, &shape, &output));
    OP_REQUIRES_OK(ctx, tf_adapter::LaunchOnComputeStream(ctx, [&](GpuStream stream) {
                     return LaunchFirFilter<T>(stream, ctx->input(0).flat<T>().data(),
                                               output->flat<T>().data(), shape, taps.view());
                   }));
  }

 private:
  FirPadding padding_ = FirPadding::kSame;
  tf_adapter::TableOperand<T> taps_;
};

#endif  // CONSTMEM_WITH_GPU

}  // namespace
}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_FLOAT_TABLE_OP("Constmem>FirFilter", "taps", constmem::ops::FirFilterCpuKernel,
                                 constmem::ops::FirFilterGpuKernel);

// SPDX-License-Identifier: Apache-2.0
// ApplyGain's CPU and GPU kernels, each a few lines on constmem's TensorFlow adapter.
#include "adapter/kernel_registration.h"
#include "adapter/table_adapter.h"
#include "apply_gain/apply_gain_launcher.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace example {
namespace {

using constmem::tf_adapter::TableFrom;
using tensorflow::OpKernelContext;

// Checks x and the gain count, allocates y; `rows` and `row_length` describe x as a matrix.
absl::Status Prepare(OpKernelContext* ctx, std::int64_t gains, std::int64_t* rows,
                     std::int64_t* row_length, tensorflow::Tensor** y) {
  const tensorflow::TensorShape& x = ctx->input(0).shape();
  if (x.dims() < 1) return absl::InvalidArgumentError("x must have rank 1 or more");
  *row_length = x.dim_size(x.dims() - 1);
  *rows = 1;
  for (int d = 0; d + 1 < x.dims(); ++d) *rows *= x.dim_size(d);
  if (gains != *rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("gains must have one entry per row of x (", *rows, "); got ", gains));
  }
  return ctx->allocate_output(0, x, y);
}

template <TableFrom kFrom>
class ApplyGainCpu : public tensorflow::OpKernel {
 public:
  explicit ApplyGainCpu(tensorflow::OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, gains_.Init(ctx, kFrom, 1, "gains", kMaxGains));
  }
  void Compute(OpKernelContext* ctx) override {
    const float* gains = nullptr;
    std::int64_t count = 0, rows = 0, row_length = 0;
    OP_REQUIRES_OK(ctx, gains_.HostValues(ctx, &gains, &count));
    tensorflow::Tensor* y = nullptr;
    OP_REQUIRES_OK(ctx, Prepare(ctx, count, &rows, &row_length, &y));
    const float* x = ctx->input(0).flat<float>().data();
    float* out = y->flat<float>().data();
    // Over TensorFlow's intra-op threads, in shards sized from the cost of an element.
    constmem::tf_adapter::ShardOnCpuWorkers(ctx, rows * row_length, /*cost_per_element=*/2,
                                            [&](std::int64_t begin, std::int64_t end) {
                                              for (std::int64_t i = begin; i < end; ++i) {
                                                out[i] = x[i] * gains[i / row_length];
                                              }
                                            });
  }

 private:
  constmem::tf_adapter::TableOperand<float> gains_;
};

#if CONSTMEM_WITH_GPU
template <TableFrom kFrom>
class ApplyGainGpu : public tensorflow::OpKernel {
 public:
  explicit ApplyGainGpu(tensorflow::OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, gains_.Init(ctx, kFrom, 1, "gains", kMaxGains));
  }
  void Compute(OpKernelContext* ctx) override {
    constmem::tf_adapter::GpuTableArgument<float> gains;
    OP_REQUIRES_OK(ctx, gains_.PrepareGpu(ctx, ApplyGainPlacement, &gains));
    std::int64_t rows = 0, row_length = 0;
    tensorflow::Tensor* y = nullptr;
    OP_REQUIRES_OK(ctx, Prepare(ctx, gains.view().size, &rows, &row_length, &y));
    OP_REQUIRES_OK(
        ctx, constmem::tf_adapter::LaunchOnComputeStream(ctx, [&](constmem::GpuStream stream) {
          return LaunchApplyGain(stream, ctx->input(0).flat<float>().data(),
                                 y->flat<float>().data(), rows, row_length, gains.view());
        }));
  }

 private:
  constmem::tf_adapter::TableOperand<float> gains_;
};
#endif

}  // namespace
}  // namespace example

// The ops take float32 only: kernels templated on the table form alone, no type attr.
CONSTMEM_REGISTER_KERNELS("Example>ApplyGain", {
  using constmem::tf_adapter::RegisterTableFormKernels;
  RegisterTableFormKernels<example::ApplyGainCpu>("Example>ApplyGain", tensorflow::DEVICE_CPU,
                                                  "gains");
#if CONSTMEM_WITH_GPU
  RegisterTableFormKernels<example::ApplyGainGpu>("Example>ApplyGain", tensorflow::DEVICE_GPU,
                                                  "gains");
#endif
});

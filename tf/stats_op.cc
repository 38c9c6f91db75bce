// SPDX-License-Identifier: Apache-2.0
// Constmem>UploadStats: the core's process-wide counters, so that tests and benchmarks can see
// which path each table took (uploads by source, skipped uploads; in test builds the staging
// checks), and in test builds Constmem>InjectFaultForTesting.
#include "adapter/kernel_registration.h"
#include "adapter/table_adapter.h"
#include "constmem/stats.hpp"
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace constmem {
namespace ops {
namespace {

constexpr int kCounterCount = static_cast<int>(Counter::kCount);

class UploadStatsOp : public tensorflow::OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(tensorflow::OpKernelContext* ctx) override {
    tensorflow::Tensor* values = nullptr;
    tensorflow::Tensor* names = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, tensorflow::TensorShape({kCounterCount}), &values));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, tensorflow::TensorShape({kCounterCount}), &names));
    for (int i = 0; i < kCounterCount; ++i) {
      values->flat<std::int64_t>()(i) = CounterValue(static_cast<Counter>(i));
      names->flat<tensorflow::tstring>()(i) = CounterName(static_cast<Counter>(i));
    }
  }
};

#ifdef CONSTMEM_TESTING_SWITCHES
// Test builds only: arms the core's fault injection inside this library (tests of error paths
// through TensorFlow). Without GPU kernels there is nothing to inject into.
class InjectFaultForTestingOp : public tensorflow::OpKernel {
 public:
  explicit InjectFaultForTestingOp(tensorflow::OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("point", &point_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("nth", &nth_));
  }

  void Compute(tensorflow::OpKernelContext* ctx) override {
#if CONSTMEM_WITH_GPU
    OP_REQUIRES_OK(ctx, tf_adapter::ToTfStatus(InjectFaultForTesting(point_, nth_)));
#else
    ctx->SetStatus(absl::UnimplementedError("constmem was built without GPU kernels"));
#endif
  }

 private:
  int point_ = 0;
  int nth_ = 0;
};
#endif

}  // namespace
}  // namespace ops
}  // namespace constmem

REGISTER_OP("Constmem>UploadStats")
    .Output("values: int64")
    .Output("names: string")
    .SetIsStateful()
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      c->set_output(0, c->Vector(constmem::ops::kCounterCount));
      c->set_output(1, c->Vector(constmem::ops::kCounterCount));
      return absl::OkStatus();
    });

CONSTMEM_REGISTER_KERNELS("Constmem>UploadStats", {
  constmem::tf_adapter::RegisterKernel<constmem::ops::UploadStatsOp>(
      Name("Constmem>UploadStats").Device(tensorflow::DEVICE_CPU));
});

#ifdef CONSTMEM_TESTING_SWITCHES
REGISTER_OP("Constmem>InjectFaultForTesting")
    .Attr("point: int")
    .Attr("nth: int")
    .SetIsStateful()
    .SetShapeFn(tensorflow::shape_inference::NoOutputs);

CONSTMEM_REGISTER_KERNELS("Constmem>InjectFaultForTesting", {
  constmem::tf_adapter::RegisterKernel<constmem::ops::InjectFaultForTestingOp>(
      Name("Constmem>InjectFaultForTesting").Device(tensorflow::DEVICE_CPU));
});
#endif

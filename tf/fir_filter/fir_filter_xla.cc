// SPDX-License-Identifier: Apache-2.0
// FirFilter under XLA: a custom call into the CPU kernel and the GPU launcher (xla_lowering.h).
#include <string>

#include "adapter/xla/xla_lowering.h"
#include "fir_filter/fir_filter_cpu.h"
#include "fir_filter/fir_filter_functor.h"
#include "tensorflow/core/framework/node_def_util.h"
#if CONSTMEM_WITH_GPU
#include "fir_filter/fir_filter_launcher.h"
#endif

namespace constmem {
namespace ops {
namespace {

namespace ffi = ::xla::ffi;

// The filter's shape from x's dimensions (rank 1 or more, checked when the graph compiled).
FirShape ShapeOf(const ffi::AnyBuffer& x, std::int64_t taps, std::int64_t same) {
  const auto dims = x.dimensions();
  std::int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < dims.size(); ++d) rows *= dims[d];
  return MakeFirShape(rows, dims.back(), taps, same ? FirPadding::kSame : FirPadding::kValid);
}

ffi::Error FirFilterHost(ffi::AnyBuffer x, ffi::AnyBuffer taps, ffi::Result<ffi::AnyBuffer> y,
                         std::int64_t same) {
  return tf_adapter::ForFloatTypeOnHost(x.element_type(), [&](auto zero) {
    using T = decltype(zero);
    const FirShape shape = ShapeOf(x, static_cast<std::int64_t>(taps.element_count()), same);
    FirFilterCpuRange(x.typed_data<T>(), y->typed_data<T>(), shape, taps.typed_data<T>(), 0,
                      shape.rows * shape.outputs);
    return ffi::Error::Success();
  });
}
XLA_FFI_DEFINE_HANDLER(kFirFilterHost, FirFilterHost,
                       ffi::Ffi::Bind()
                           .Arg<ffi::AnyBuffer>()
                           .Arg<ffi::AnyBuffer>()
                           .Ret<ffi::AnyBuffer>()
                           .Attr<std::int64_t>("same"));

#if CONSTMEM_WITH_GPU
ffi::Error FirFilterCuda(GpuStream stream, ffi::AnyBuffer x, ffi::AnyBuffer taps,
                         ffi::Result<ffi::AnyBuffer> y, std::int64_t same) {
  return tf_adapter::ForFloatType(x.element_type(), [&](auto zero) {
    using T = decltype(zero);
    const auto count = static_cast<std::int64_t>(taps.element_count());
    const TableView<T> view{taps.typed_data<T>(), count, SourceKind::kDevice};
    return tf_adapter::FfiError(LaunchFirFilter<T>(stream, x.typed_data<T>(), y->typed_data<T>(),
                                                   ShapeOf(x, count, same), view));
  });
}
XLA_FFI_DEFINE_HANDLER(kFirFilterCuda, FirFilterCuda,
                       ffi::Ffi::Bind()
                           .Ctx<ffi::PlatformStream<GpuStream>>()
                           .Arg<ffi::AnyBuffer>()
                           .Arg<ffi::AnyBuffer>()
                           .Ret<ffi::AnyBuffer>()
                           .Attr<std::int64_t>("same"));
#endif

tf_adapter::XlaLowering FirFilterLowering() {
  tf_adapter::XlaLowering lowering =
      tf_adapter::MakeXlaLowering("Constmem>FirFilter", "constmem_fir_filter", "taps", kFirMaxTaps,
                                  kFirFilterHost, CONSTMEM_XLA_CUDA_HANDLER(kFirFilterCuda));
  lowering.rows_along_last_axis = true;
  lowering.describe = [](tensorflow::XlaOpKernelContext* ctx, std::int64_t taps,
                         std::vector<std::int64_t>* dims, std::string* attributes) {
    std::string padding;
    TF_RETURN_IF_ERROR(tensorflow::GetNodeAttr(ctx->op_kernel().def(), "padding", &padding));
    if (dims->empty()) {
      return absl::InvalidArgumentError(
          "x must have rank 1 or more (the filter runs along the last axis); got a scalar");
    }
    const bool same = padding != "VALID";
    const FirShape shape =
        MakeFirShape(1, dims->back(), taps, same ? FirPadding::kSame : FirPadding::kValid);
    dims->back() = shape.outputs;
    *attributes = same ? "{same = 1 : i64}" : "{same = 0 : i64}";
    return absl::OkStatus();
  };
  return lowering;
}

}  // namespace
}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_XLA_LOWERING(fir_filter, constmem::ops::FirFilterLowering());

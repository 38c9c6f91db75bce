// SPDX-License-Identifier: Apache-2.0
// Polyval under XLA: a custom call into the CPU kernel and the GPU launcher (xla_lowering.h).
#include "adapter/xla/xla_lowering.h"
#include "polyval/polyval_cpu.h"
#include "polyval/polyval_functor.h"
#if CONSTMEM_WITH_GPU
#include "polyval/polyval_launcher.h"
#endif

namespace constmem {
namespace ops {
namespace {

namespace ffi = ::xla::ffi;

ffi::Error PolyvalHost(ffi::AnyBuffer x, ffi::AnyBuffer coeffs, ffi::Result<ffi::AnyBuffer> y) {
  return tf_adapter::ForFloatTypeOnHost(x.element_type(), [&](auto zero) {
    using T = decltype(zero);
    PolyvalCpuRange(x.typed_data<T>(), y->typed_data<T>(), 0,
                    static_cast<std::int64_t>(x.element_count()), coeffs.typed_data<T>(),
                    static_cast<std::int64_t>(coeffs.element_count()));
    return ffi::Error::Success();
  });
}
XLA_FFI_DEFINE_HANDLER(
    kPolyvalHost, PolyvalHost,
    ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>());

#if CONSTMEM_WITH_GPU
ffi::Error PolyvalCuda(GpuStream stream, ffi::AnyBuffer x, ffi::AnyBuffer coeffs,
                       ffi::Result<ffi::AnyBuffer> y) {
  return tf_adapter::ForFloatType(x.element_type(), [&](auto zero) {
    using T = decltype(zero);
    const TableView<T> view{coeffs.typed_data<T>(),
                            static_cast<std::int64_t>(coeffs.element_count()), SourceKind::kDevice};
    return tf_adapter::FfiError(LaunchPolyval<T>(stream, x.typed_data<T>(), y->typed_data<T>(),
                                                 static_cast<std::int64_t>(x.element_count()),
                                                 view));
  });
}
XLA_FFI_DEFINE_HANDLER(kPolyvalCuda, PolyvalCuda,
                       ffi::Ffi::Bind()
                           .Ctx<ffi::PlatformStream<GpuStream>>()
                           .Arg<ffi::AnyBuffer>()
                           .Arg<ffi::AnyBuffer>()
                           .Ret<ffi::AnyBuffer>());
#endif

tf_adapter::XlaLowering PolyvalLowering() {
  tf_adapter::XlaLowering lowering = tf_adapter::MakeXlaLowering(
      "Constmem>Polyval", "constmem_polyval", "coeffs", kPolyvalMaxCoefficients, kPolyvalHost,
      CONSTMEM_XLA_CUDA_HANDLER(kPolyvalCuda));
  return lowering;
}

}  // namespace
}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_XLA_LOWERING(polyval, constmem::ops::PolyvalLowering());

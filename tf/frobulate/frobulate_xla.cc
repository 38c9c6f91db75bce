// SPDX-License-Identifier: Apache-2.0
// Frobulate under XLA: a custom call into the CPU kernel and the GPU launcher (xla_lowering.h).
#include <vector>

#include "adapter/xla/xla_lowering.h"
#include "frobulate/frobulate_cpu.h"
#include "frobulate/frobulate_functor.h"
#if CONSTMEM_WITH_GPU
#include "frobulate/frobulate_launcher.h"
#endif

namespace constmem {
namespace ops {
namespace {

namespace ffi = ::xla::ffi;

ffi::Error FrobulateHost(ffi::AnyBuffer data, ffi::Buffer<ffi::S32> table,
                         ffi::Result<ffi::AnyBuffer> out) {
  return tf_adapter::ForFloatTypeOnHost(data.element_type(), [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T> entries(table.typed_data(), table.typed_data() + table.element_count());
    FrobulateCpuRange(data.typed_data<T>(), out->typed_data<T>(), 0,
                      static_cast<std::int64_t>(data.element_count()), entries.data(),
                      static_cast<std::int64_t>(entries.size()));
    return ffi::Error::Success();
  });
}
XLA_FFI_DEFINE_HANDLER(
    kFrobulateHost, FrobulateHost,
    ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Arg<ffi::Buffer<ffi::S32>>().Ret<ffi::AnyBuffer>());

#if CONSTMEM_WITH_GPU
ffi::Error FrobulateCuda(GpuStream stream, ffi::AnyBuffer data, ffi::Buffer<ffi::S32> table,
                         ffi::Result<ffi::AnyBuffer> out) {
  return tf_adapter::ForFloatType(data.element_type(), [&](auto zero) {
    using T = decltype(zero);
    const TableView<std::int32_t> view{
        table.typed_data(), static_cast<std::int64_t>(table.element_count()), SourceKind::kDevice};
    return tf_adapter::FfiError(
        LaunchFrobulate<T>(stream, data.typed_data<T>(), out->typed_data<T>(),
                           static_cast<std::int64_t>(data.element_count()), view));
  });
}
XLA_FFI_DEFINE_HANDLER(kFrobulateCuda, FrobulateCuda,
                       ffi::Ffi::Bind()
                           .Ctx<ffi::PlatformStream<GpuStream>>()
                           .Arg<ffi::AnyBuffer>()
                           .Arg<ffi::Buffer<ffi::S32>>()
                           .Ret<ffi::AnyBuffer>());
#endif

tf_adapter::XlaLowering FrobulateLowering() {
  tf_adapter::XlaLowering lowering = tf_adapter::MakeXlaLowering(
      "Constmem>Frobulate", "constmem_frobulate", "table", kFrobulateMaxTableSize, kFrobulateHost,
      CONSTMEM_XLA_CUDA_HANDLER(kFrobulateCuda));
  lowering.int32_table = true;
  return lowering;
}

}  // namespace
}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_XLA_LOWERING(frobulate, constmem::ops::FrobulateLowering());

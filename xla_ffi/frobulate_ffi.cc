// SPDX-License-Identifier: Apache-2.0
// Frobulate's XLA FFI handlers (handlers.h): data and an int32 table in, data's shape out.
#include <cstdint>
#include <vector>

#include "ffi_support.h"
#include "frobulate/frobulate_cpu.h"
#include "frobulate/frobulate_functor.h"
#include "handlers.h"
#if CONSTMEM_WITH_GPU
#include "frobulate/frobulate_launcher.h"
#endif

namespace constmem {
namespace xla_ffi {
namespace {

ffi::Error FrobulateHost(ffi::AnyBuffer data, ffi::Buffer<ffi::S32> table,
                         ffi::Result<ffi::AnyBuffer> out) {
  return ForFloatTypeOnHost(data.element_type(), [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T> entries(table.typed_data(), table.typed_data() + table.element_count());
    ops::FrobulateCpuRange(data.typed_data<T>(), out->typed_data<T>(), 0,
                           static_cast<std::int64_t>(data.element_count()), entries.data(),
                           static_cast<std::int64_t>(entries.size()));
    return ffi::Error::Success();
  });
}

#if CONSTMEM_WITH_GPU
ffi::Error FrobulateCuda(GpuStream stream, ffi::AnyBuffer data, ffi::Buffer<ffi::S32> table,
                         ffi::Result<ffi::AnyBuffer> out) {
  return ForFloatType(data.element_type(), [&](auto zero) {
    using T = decltype(zero);
    const TableView<std::int32_t> view{
        table.typed_data(), static_cast<std::int64_t>(table.element_count()), SourceKind::kDevice};
    return FfiError(ops::LaunchFrobulate<T>(stream, data.typed_data<T>(), out->typed_data<T>(),
                                            static_cast<std::int64_t>(data.element_count()), view));
  });
}
#endif

}  // namespace
}  // namespace xla_ffi
}  // namespace constmem

namespace ffi = ::xla::ffi;

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    constmem_frobulate_host, constmem::xla_ffi::FrobulateHost,
    ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Arg<ffi::Buffer<ffi::S32>>().Ret<ffi::AnyBuffer>());
#if CONSTMEM_WITH_GPU
XLA_FFI_DEFINE_HANDLER_SYMBOL(constmem_frobulate_cuda, constmem::xla_ffi::FrobulateCuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<constmem::GpuStream>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::AnyBuffer>(),
                              {ffi::Traits::kCmdBufferCompatible});
#endif

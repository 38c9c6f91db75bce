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

template <class T>
ffi::Error FrobulateOnHost(ffi::AnyBuffer data, ffi::Result<ffi::AnyBuffer> out,
                           const std::int32_t* table, std::int64_t count) {
  const std::vector<T> entries(table, table + count);
  ops::FrobulateCpuRange(data.typed_data<T>(), out->typed_data<T>(), 0,
                         static_cast<std::int64_t>(data.element_count()), entries.data(), count);
  return ffi::Error::Success();
}

ffi::Error FrobulateHost(ffi::AnyBuffer data, ffi::Buffer<ffi::S32> table,
                         ffi::Result<ffi::AnyBuffer> out) {
  return ForFloatTypeOnHost(data.element_type(), [&](auto zero) {
    return FrobulateOnHost<decltype(zero)>(data, out, table.typed_data(),
                                           static_cast<std::int64_t>(table.element_count()));
  });
}

ffi::Error FrobulateStaticHost(ffi::AnyBuffer data, ffi::Result<ffi::AnyBuffer> out,
                               ffi::Span<const std::int32_t> table) {
  return ForFloatTypeOnHost(data.element_type(), [&](auto zero) {
    return FrobulateOnHost<decltype(zero)>(data, out, table.begin(),
                                           static_cast<std::int64_t>(table.size()));
  });
}

#if CONSTMEM_WITH_GPU
ffi::Error FrobulateOnCuda(GpuStream stream, ffi::AnyBuffer data, ffi::Result<ffi::AnyBuffer> out,
                           const TableView<std::int32_t>& table) {
  return ForFloatType(data.element_type(), [&](auto zero) {
    using T = decltype(zero);
    return FfiError(ops::LaunchFrobulate<T>(stream, data.typed_data<T>(), out->typed_data<T>(),
                                            static_cast<std::int64_t>(data.element_count()),
                                            table));
  });
}

ffi::Error FrobulateCuda(GpuStream stream, ffi::AnyBuffer data, ffi::Buffer<ffi::S32> table,
                         ffi::Result<ffi::AnyBuffer> out) {
  return FrobulateOnCuda(
      stream, data, out,
      {table.typed_data(), static_cast<std::int64_t>(table.element_count()), SourceKind::kDevice});
}

// A static table arrives as an attribute, the same bytes at every call: by value or uploaded once
// per device and content.
ffi::Error FrobulateStaticCuda(GpuStream stream, ffi::AnyBuffer data,
                               ffi::Result<ffi::AnyBuffer> out,
                               ffi::Span<const std::int32_t> table) {
  return FrobulateOnCuda(stream, data, out,
                         {table.begin(), static_cast<std::int64_t>(table.size()),
                          SourceKind::kPageableHost, /*repeats=*/true});
}
#endif

}  // namespace
}  // namespace xla_ffi
}  // namespace constmem

namespace ffi = ::xla::ffi;

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    constmem_frobulate_host, constmem::xla_ffi::FrobulateHost,
    ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Arg<ffi::Buffer<ffi::S32>>().Ret<ffi::AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(constmem_frobulate_static_host,
                              constmem::xla_ffi::FrobulateStaticHost,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<ffi::Span<const std::int32_t>>("table"));
#if CONSTMEM_WITH_GPU
XLA_FFI_DEFINE_HANDLER_SYMBOL(constmem_frobulate_cuda, constmem::xla_ffi::FrobulateCuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<constmem::GpuStream>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::AnyBuffer>(),
                              {ffi::Traits::kCmdBufferCompatible});
XLA_FFI_DEFINE_HANDLER_SYMBOL(constmem_frobulate_static_cuda,
                              constmem::xla_ffi::FrobulateStaticCuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<constmem::GpuStream>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<ffi::Span<const std::int32_t>>("table"),
                              {ffi::Traits::kCmdBufferCompatible});
#endif

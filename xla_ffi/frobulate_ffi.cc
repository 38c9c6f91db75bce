// SPDX-License-Identifier: Apache-2.0
// Frobulate's XLA FFI handlers (handlers.h): data and an int32 table in, data's shape out.
#include <cstdint>
#include <vector>

#include "ffi_support.h"
#include "frobulate/frobulate_cpu.h"
#include "handlers.h"
#if CONSTMEM_WITH_GPU
#include "frobulate/frobulate_launcher.h"
#endif

namespace constmem {
namespace xla_ffi {

struct FrobulateFfi : FfiTableOp {
  static constexpr bool kInt32Table = true;
  template <class T>
  static Status RunOnHost(const ffi::AnyBuffer& data, T* out,
                          const TableView<std::int32_t>& table) {
    // The CPU kernel adds entries converted to T.
    const std::vector<T> entries(table.values, table.values + table.size);
    ops::FrobulateCpuRange(data.typed_data<T>(), out, 0,
                           static_cast<std::int64_t>(data.element_count()), entries.data(),
                           table.size);
    return Status::Ok();
  }
#if CONSTMEM_WITH_GPU
  template <class T>
  static Status RunOnCuda(GpuStream stream, const ffi::AnyBuffer& data, T* out,
                          const TableView<std::int32_t>& table) {
    return ops::LaunchFrobulate<T>(stream, data.typed_data<T>(), out,
                                   static_cast<std::int64_t>(data.element_count()), table);
  }
#endif
};

}  // namespace xla_ffi
}  // namespace constmem

CONSTMEM_DEFINE_FFI_TABLE_HANDLERS(constmem_frobulate, constmem::xla_ffi::FrobulateFfi);

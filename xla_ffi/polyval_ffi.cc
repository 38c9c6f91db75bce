// SPDX-License-Identifier: Apache-2.0
// Polyval's XLA FFI handlers (handlers.h): x and coefficients of x's dtype in, x's shape out.
#include <cstdint>

#include "ffi_support.h"
#include "handlers.h"
#include "polyval/polyval_cpu.h"
#if CONSTMEM_WITH_GPU
#include "polyval/polyval_launcher.h"
#endif

namespace constmem {
namespace xla_ffi {

struct PolyvalFfi : FfiTableOp {
  template <class T>
  static Status RunOnHost(const ffi::AnyBuffer& x, T* y, const TableView<T>& coeffs) {
    ops::PolyvalCpuRange(x.typed_data<T>(), y, 0, static_cast<std::int64_t>(x.element_count()),
                         coeffs.values, coeffs.size);
    return Status::Ok();
  }
#if CONSTMEM_WITH_GPU
  template <class T>
  static Status RunOnCuda(GpuStream stream, const ffi::AnyBuffer& x, T* y,
                          const TableView<T>& coeffs) {
    return ops::LaunchPolyval<T>(stream, x.typed_data<T>(), y,
                                 static_cast<std::int64_t>(x.element_count()), coeffs);
  }
#endif
};

}  // namespace xla_ffi
}  // namespace constmem

CONSTMEM_DEFINE_FFI_TABLE_HANDLERS(constmem_polyval, constmem::xla_ffi::PolyvalFfi);

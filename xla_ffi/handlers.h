// SPDX-License-Identifier: Apache-2.0
// The ops' XLA FFI handlers, as C symbols: "host" runs the CPU kernel, "cuda" the GPU launcher on
// XLA's stream with the table read from device memory; the "static" forms take the table as an
// attribute `table` instead (float64 values already rounded to the data's dtype; int32 for
// Frobulate), host memory whose bytes repeat at every call. FirFilter takes an int64 attribute
// `same` (1: SAME padding, 0: VALID); Interpolate f64 attributes `lo` and `hi`.
#pragma once

#include "xla/ffi/api/ffi.h"

XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_frobulate_host);
XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_polyval_host);
XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_fir_filter_host);
XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_frobulate_static_host);
XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_polyval_static_host);
XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_fir_filter_static_host);
XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_interpolate_host);
XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_interpolate_static_host);
#if CONSTMEM_WITH_GPU
XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_frobulate_cuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_polyval_cuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_fir_filter_cuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_frobulate_static_cuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_polyval_static_cuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_fir_filter_static_cuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_interpolate_cuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(constmem_interpolate_static_cuda);
#endif

// SPDX-License-Identifier: Apache-2.0
// Every op's limits as C functions, compiled into each framework's library, so that the Python
// wrappers read them with ctypes and they are defined once, in the op's own header.
#include "fir_filter/fir_filter_functor.h"
#include "frobulate/frobulate_functor.h"
#include "polyval/polyval_functor.h"

#define CONSTMEM_EXPORT_LIMIT(name, value) \
  extern "C" __attribute__((visibility("default"))) long long name() { return value; }

CONSTMEM_EXPORT_LIMIT(constmem_frobulate_max_table_size, constmem::ops::kFrobulateMaxTableSize)
CONSTMEM_EXPORT_LIMIT(constmem_polyval_max_coefficients, constmem::ops::kPolyvalMaxCoefficients)
CONSTMEM_EXPORT_LIMIT(constmem_fir_filter_max_taps, constmem::ops::kFirMaxTaps)

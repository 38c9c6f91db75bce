// SPDX-License-Identifier: Apache-2.0
// Every op's limits and the core's counters as C functions, compiled into each framework's
// library, so that the Python wrappers read them with ctypes and they are defined once.
#include <cstring>

#include "constmem/stats.hpp"
#include "fir_filter/fir_filter_functor.h"
#include "frobulate/frobulate_functor.h"
#include "interpolate/interpolate_functor.h"
#include "polyval/polyval_functor.h"

#define CONSTMEM_EXPORT_LIMIT(name, value) \
  extern "C" __attribute__((visibility("default"))) long long name() { return value; }

CONSTMEM_EXPORT_LIMIT(constmem_frobulate_max_table_size, constmem::ops::kFrobulateMaxTableSize)
CONSTMEM_EXPORT_LIMIT(constmem_polyval_max_coefficients, constmem::ops::kPolyvalMaxCoefficients)
CONSTMEM_EXPORT_LIMIT(constmem_fir_filter_max_taps, constmem::ops::kFirMaxTaps)
CONSTMEM_EXPORT_LIMIT(constmem_interpolate_max_knots, constmem::ops::kInterpolateMaxKnots)

// The core's counters in this library (each library has its own): how many there are, and each
// one's name and value.
extern "C" __attribute__((visibility("default"))) int constmem_counter_count() {
  return static_cast<int>(constmem::Counter::kCount);
}
extern "C" __attribute__((visibility("default"))) const char* constmem_counter_name(int i) {
  if (i < 0 || i >= constmem_counter_count()) return nullptr;
  return constmem::CounterName(static_cast<constmem::Counter>(i));
}
extern "C" __attribute__((visibility("default"))) long long constmem_counter_value(int i) {
  if (i < 0 || i >= constmem_counter_count()) return -1;
  return constmem::CounterValue(static_cast<constmem::Counter>(i));
}

// SPDX-License-Identifier: Apache-2.0
// What every framework's op library exports for its Python package: the op registry (each op's
// names, table rule, flags and attributes, from its description) and the core's counters.
#include "constmem/op_description.hpp"
#include "constmem/stats.hpp"
#include "constmem_ops.h"

CONSTMEM_EXPORT_OP_REGISTRY(constmem_op_registry, CONSTMEM_OPS)

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

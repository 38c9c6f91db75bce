// SPDX-License-Identifier: Apache-2.0
// A library built on the core with default visibility and no special flags, as an op author's
// would be; visibility_test loads two builds of it with different settings into one process.
#include <cstdint>

#include "constmem/hazard_tracking.hpp"
#include "constmem/stats.hpp"

#define VISIBILITY_LIB_EXPORT extern "C" __attribute__((visibility("default")))

// Counts `amount` on a core counter and returns its value in this library.
VISIBILITY_LIB_EXPORT std::int64_t visibility_lib_count(std::int64_t amount) {
  constmem::Count(constmem::Counter::kUploadSkipped, amount);
  return constmem::CounterValue(constmem::Counter::kUploadSkipped);
}

VISIBILITY_LIB_EXPORT const void* visibility_lib_counters() { return &constmem::Counters(); }

VISIBILITY_LIB_EXPORT bool visibility_lib_hazard_tracking() {
  return constmem::HazardTrackingEnabled();
}

VISIBILITY_LIB_EXPORT void visibility_lib_set_hazard_tracking(bool enabled) {
  constmem::SetHazardTrackingForTesting(enabled);
}

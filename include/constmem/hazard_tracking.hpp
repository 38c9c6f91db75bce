// SPDX-License-Identifier: Apache-2.0
// Cross-stream hazard tracking: the slot events of banks and the capture path's private copies.
// Always on in a shipped build. A build that defines CONSTMEM_HAZARD_TRACKING_DEFAULT=0 has it off
// (the "unsafe" variants that prove the stress tests can fail); a test build, which defines
// CONSTMEM_TESTING_SWITCHES (the CMake option CONSTMEM_TEST_HOOKS, and some C++ tests), may switch
// it at run time. Host-only.
#pragma once

#include <atomic>

#ifndef CONSTMEM_HAZARD_TRACKING_DEFAULT
#define CONSTMEM_HAZARD_TRACKING_DEFAULT 1
#endif

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

// Whether this build can run without tracking at all: only then is the unprotected code compiled.
#if defined(CONSTMEM_TESTING_SWITCHES) || CONSTMEM_HAZARD_TRACKING_DEFAULT == 0
constexpr bool kHazardTrackingCanBeOff = true;
#else
constexpr bool kHazardTrackingCanBeOff = false;
#endif

#ifdef CONSTMEM_TESTING_SWITCHES
namespace detail {
inline std::atomic<bool>& HazardTrackingFlag() {
  static std::atomic<bool> enabled{CONSTMEM_HAZARD_TRACKING_DEFAULT != 0};
  return enabled;
}
}  // namespace detail

inline bool HazardTrackingEnabled() { return detail::HazardTrackingFlag().load(); }

// With tracking off a bank neither waits for earlier readers before an upload nor for an earlier
// upload before a read, and a captured launch reads a bank slot that every replay writes, so the
// races tracking prevents show.
inline void SetHazardTrackingForTesting(bool enabled) {
  detail::HazardTrackingFlag().store(enabled);
}
#else
constexpr bool HazardTrackingEnabled() { return CONSTMEM_HAZARD_TRACKING_DEFAULT != 0; }
#endif

}  // namespace constmem
#pragma GCC visibility pop

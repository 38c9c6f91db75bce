// SPDX-License-Identifier: Apache-2.0
// Process-wide counters of what the core and its adapters did: which source each upload came
// from, which uploads were skipped, and how staging memory was checked and released. Tests and
// benchmarks read them to prove behaviour (an attr uploaded once, staging released only after its
// copy ran); they cost one relaxed atomic increment each.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

enum class Counter : int {
  kUploadFromDevice = 0,
  kUploadFromPinnedHost,
  kUploadFromPageableHost,
  kUploadSkipped,
  kByValueLaunch,
  kConstantBankLaunch,
  kGlobalMemoryLaunch,
  kStagingPinnedVerified,
  kStagingNotPinned,
  kStagingReleasedAfterCopy,
  kStagingReleasedEarly,
  kSlotQuarantined,
  kStagingPageableFallback,
  kStagingBufferFreed,
  kCapturedLaunch,
  kSharedMemoryLaunch,
  kStreamBufferUpload,
  kCount,
};

inline const char* CounterName(Counter counter) {
  static const char* const kNames[] = {
      "upload_from_device",        "upload_from_pinned_host",
      "upload_from_pageable_host", "upload_skipped",
      "by_value_launch",           "constant_bank_launch",
      "global_memory_launch",      "staging_pinned_verified",
      "staging_not_pinned",        "staging_released_after_copy",
      "staging_released_early",    "slot_quarantined",
      "staging_pageable_fallback", "staging_buffer_freed",
      "captured_launch",           "shared_memory_launch",
      "stream_buffer_upload",
  };
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<int>(Counter::kCount),
                "one name per counter");
  return kNames[static_cast<int>(counter)];
}

inline std::array<std::atomic<std::int64_t>, static_cast<int>(Counter::kCount)>& Counters() {
  static std::array<std::atomic<std::int64_t>, static_cast<int>(Counter::kCount)> counters{};
  return counters;
}

inline void Count(Counter counter, std::int64_t amount = 1) {
  Counters()[static_cast<int>(counter)].fetch_add(amount, std::memory_order_relaxed);
}

inline std::int64_t CounterValue(Counter counter) {
  return Counters()[static_cast<int>(counter)].load(std::memory_order_relaxed);
}

}  // namespace constmem
#pragma GCC visibility pop

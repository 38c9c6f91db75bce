// SPDX-License-Identifier: Apache-2.0
// Two libraries built on the same core headers, one with hazard tracking off by default, loaded
// into one process: each keeps its own core state (counters, the hazard-tracking switch), loaded
// with RTLD_LOCAL as Python loads extensions and with RTLD_GLOBAL. Exported core static variables
// would be merged by the dynamic linker (STB_GNU_UNIQUE) in both cases (visibility.hpp). Each mode
// runs in its own process (two ctests): a library cannot be loaded twice.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace {

struct Library {
  Library(const char* path, int mode) : handle(dlopen(path, mode)) {
    if (handle == nullptr) return;
    count = Find<std::int64_t (*)(std::int64_t)>("visibility_lib_count");
    counters = Find<const void* (*)()>("visibility_lib_counters");
    hazard_tracking = Find<bool (*)()>("visibility_lib_hazard_tracking");
    set_hazard_tracking = Find<void (*)(bool)>("visibility_lib_set_hazard_tracking");
  }
  template <class F>
  F Find(const char* name) {
    return reinterpret_cast<F>(dlsym(handle, name));
  }
  bool loaded() const {
    return handle != nullptr && count != nullptr && counters != nullptr &&
           hazard_tracking != nullptr && set_hazard_tracking != nullptr;
  }

  void* handle;
  std::int64_t (*count)(std::int64_t) = nullptr;
  const void* (*counters)() = nullptr;
  bool (*hazard_tracking)() = nullptr;
  void (*set_hazard_tracking)(bool) = nullptr;
};

void ExpectEachLibraryKeepsItsOwnState(int mode) {
  Library tracked(VISIBILITY_LIB_TRACKED, mode);
  Library untracked(VISIBILITY_LIB_UNTRACKED, mode);
  ASSERT_TRUE(tracked.loaded()) << dlerror();
  ASSERT_TRUE(untracked.loaded()) << dlerror();

  // Each library's own compile-time default, whichever initialised its switch first.
  EXPECT_FALSE(untracked.hazard_tracking());
  EXPECT_TRUE(tracked.hazard_tracking());
  untracked.set_hazard_tracking(true);
  tracked.set_hazard_tracking(false);
  EXPECT_TRUE(untracked.hazard_tracking());
  EXPECT_FALSE(tracked.hazard_tracking());
  tracked.set_hazard_tracking(true);
  untracked.set_hazard_tracking(false);

  EXPECT_NE(tracked.counters(), untracked.counters());
  EXPECT_EQ(tracked.count(3), 3);
  EXPECT_EQ(untracked.count(5), 5);
  EXPECT_EQ(tracked.count(0), 3);
  EXPECT_EQ(untracked.count(1), 6);
}

TEST(Visibility, LocalLoadsKeepTheirOwnCoreState) {
  ExpectEachLibraryKeepsItsOwnState(RTLD_NOW | RTLD_LOCAL);
}

TEST(Visibility, GlobalLoadsKeepTheirOwnCoreState) {
  ExpectEachLibraryKeepsItsOwnState(RTLD_NOW | RTLD_GLOBAL);
}

}  // namespace

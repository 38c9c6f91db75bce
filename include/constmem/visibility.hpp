// SPDX-License-Identifier: Apache-2.0
// The core's symbols are private to each library that compiles it. Every core header wraps its
// declarations in
//
//   #pragma GCC visibility push(hidden)
//   ...
//   #pragma GCC visibility pop
//
// so that its functions, templates and function-local static variables (counters, per-device state,
// the staging pool) are never exported, whatever visibility the library is built with: two
// libraries built on different constmem versions or settings each keep their own (docs/design.md,
// "Symbols"). g++, clang and nvcc's host pass honour the pragma; device code is unaffected.
#pragma once

// For the few value types a caller keeps inside classes of its own (Status, TableView, the table
// readers): a hidden type would make GCC warn that a class of default visibility has a field of
// hidden type. Their member functions are hidden one by one instead.
#define CONSTMEM_VISIBLE_TYPE __attribute__((visibility("default")))
#define CONSTMEM_HIDDEN __attribute__((visibility("hidden")))

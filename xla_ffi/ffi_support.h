// SPDX-License-Identifier: Apache-2.0
// What every op's XLA FFI handlers share. Only XLA's FFI header, a C ABI that TensorFlow's wheel
// and jaxlib both ship: the same handlers serve TensorFlow's XLA lowering (tf/adapter/xla/) and
// JAX (jax.ffi), each compiled against its own copy of the header.
#pragma once

#include <utility>

#include "constmem/cpu_float_mode.hpp"
#include "constmem/status.hpp"
#include "xla/ffi/api/ffi.h"

namespace constmem {
namespace xla_ffi {

namespace ffi = ::xla::ffi;

// A Status as an FFI error (kInvalidArgument for bad input, kInternal for anything else).
inline ffi::Error FfiError(const Status& status) {
  if (status.ok()) return ffi::Error::Success();
  const ffi::ErrorCode code = status.code() == StatusCode::kInvalidArgument
                                  ? ffi::ErrorCode::kInvalidArgument
                                  : ffi::ErrorCode::kInternal;
  return ffi::Error(code, status.ToString());
}

// Calls fn(T{}) with T the C++ type of a float32 or float64 buffer.
template <class Fn>
ffi::Error ForFloatType(ffi::DataType type, Fn&& fn) {
  switch (type) {
    case ffi::DataType::F32:
      return fn(float{});
    case ffi::DataType::F64:
      return fn(double{});
    default:
      return ffi::Error(ffi::ErrorCode::kInvalidArgument, "float32 or float64 data");
  }
}

// ForFloatType for a host handler: fn runs with denormals flushed (FTZ and DAZ), as the op's CPU
// kernel does on TensorFlow's CPU threads, whichever thread XLA runs it on.
template <class Fn>
ffi::Error ForFloatTypeOnHost(ffi::DataType type, Fn&& fn) {
  cpu::ScopedFlushDenormals flush;
  return ForFloatType(type, std::forward<Fn>(fn));
}

}  // namespace xla_ffi
}  // namespace constmem

// SPDX-License-Identifier: Apache-2.0
// What every op's XLA FFI handlers share. Only XLA's FFI header, a C ABI that TensorFlow's wheel
// and jaxlib both ship: the same handlers serve TensorFlow's XLA lowering (tf/adapter/xla/) and
// JAX (jax.ffi), each compiled against its own copy of the header.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "constmem/cpu_float_mode.hpp"
#include "constmem/status.hpp"
#include "constmem/table.hpp"
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

// A static table as the JAX wrapper sends it: an attribute of float64 values already rounded to T,
// in XLA's storage for the call, so the same bytes come at every call (the launcher passes them by
// value or uploads them once per device and content).
template <class T>
class StaticTable {
 public:
  explicit StaticTable(ffi::Span<const double> values) {
    if constexpr (std::is_same<T, double>::value) {
      data_ = values.begin();
    } else {
      converted_.assign(values.begin(), values.end());  // exact: the values are T's
      data_ = converted_.data();
    }
    size_ = static_cast<std::int64_t>(values.size());
  }
  const T* data() const { return data_; }
  std::int64_t size() const { return size_; }
  TableView<T> View() const { return {data_, size_, SourceKind::kPageableHost, /*repeats=*/true}; }

 private:
  std::vector<T> converted_;
  const T* data_ = nullptr;
  std::int64_t size_ = 0;
};

}  // namespace xla_ffi
}  // namespace constmem

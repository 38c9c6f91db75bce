// SPDX-License-Identifier: Apache-2.0
// A small status type: the core reports every failure through it and never aborts or throws, so
// a caller such as a TensorFlow kernel can turn it into its own error type.
#pragma once

#include <string>
#include <utility>

#include "constmem/visibility.hpp"

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the caller passed something the core cannot accept
  kResourceExhausted,   // out of device, pinned or constant memory
  kFailedPrecondition,  // the device or driver cannot do what was asked
  kInternal,            // a CUDA call failed for a reason the caller could not foresee
};

inline const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kInternal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

class CONSTMEM_VISIBLE_TYPE Status {
 public:
  CONSTMEM_HIDDEN Status() = default;
  CONSTMEM_HIDDEN Status(StatusCode code, std::string message, std::string cuda_error = {})
      : code_(code), message_(std::move(message)), cuda_error_(std::move(cuda_error)) {}
  CONSTMEM_HIDDEN Status(const Status&) = default;
  CONSTMEM_HIDDEN Status(Status&&) = default;
  CONSTMEM_HIDDEN Status& operator=(const Status&) = default;
  CONSTMEM_HIDDEN Status& operator=(Status&&) = default;
  CONSTMEM_HIDDEN ~Status() = default;

  CONSTMEM_HIDDEN static Status Ok() { return Status(); }

  CONSTMEM_HIDDEN bool ok() const { return code_ == StatusCode::kOk; }
  CONSTMEM_HIDDEN StatusCode code() const { return code_; }
  CONSTMEM_HIDDEN const std::string& message() const { return message_; }
  // The CUDA runtime's name and description of the error, empty when CUDA was not involved.
  CONSTMEM_HIDDEN const std::string& cuda_error() const { return cuda_error_; }

  CONSTMEM_HIDDEN std::string ToString() const {
    if (ok()) return "OK";
    std::string text = std::string(StatusCodeName(code_)) + ": " + message_;
    if (!cuda_error_.empty()) text += " (" + cuda_error_ + ")";
    return text;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string cuda_error_;
};

inline Status InvalidArgument(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

}  // namespace constmem
#pragma GCC visibility pop

// Returns early from the enclosing function when `expr` yields a non-OK Status.
#define CONSTMEM_RETURN_IF_ERROR(expr)                   \
  do {                                                   \
    ::constmem::Status constmem_status_ = (expr);        \
    if (!constmem_status_.ok()) return constmem_status_; \
  } while (0)

// SPDX-License-Identifier: Apache-2.0
// What every op's PyTorch binding shares: checks with clear errors, the table as a launcher takes
// it, the current CUDA stream, and the CPU kernels' sharding over PyTorch's intra-op threads.
// Only PyTorch's stable ABI (torch/csrc/stable): one build serves several torch releases.
#pragma once

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "constmem/status.hpp"
#include "constmem/table.hpp"

namespace constmem {
namespace torch_binding {

using Tensor = torch::stable::Tensor;
using ScalarType = torch::headeronly::ScalarType;

// PyTorch turns std::runtime_error into a Python RuntimeError carrying the message.
[[noreturn]] inline void Fail(const std::string& message) { throw std::runtime_error(message); }

inline void ThrowIfError(const Status& status) {
  if (!status.ok()) Fail(status.ToString());
}

// The tensor itself when it is contiguous (no dispatcher call), else a contiguous copy.
inline Tensor Contiguous(const Tensor& tensor) {
  return tensor.is_contiguous() ? tensor : torch::stable::contiguous(tensor);
}

template <class T>
constexpr ScalarType ScalarTypeOf();
template <>
constexpr ScalarType ScalarTypeOf<float>() {
  return ScalarType::Float;
}
template <>
constexpr ScalarType ScalarTypeOf<double>() {
  return ScalarType::Double;
}
template <>
constexpr ScalarType ScalarTypeOf<std::int32_t>() {
  return ScalarType::Int;
}

// Runs fn(zero) with zero of the data's element type: float32 or float64, else an error naming
// the argument.
template <class Fn>
decltype(auto) ForFloatData(const Tensor& data, const char* name, Fn&& fn) {
  if (data.scalar_type() == ScalarType::Float) return fn(float{});
  if (data.scalar_type() == ScalarType::Double) return fn(double{});
  Fail(std::string(name) + " must be float32 or float64");
}

// A 1-D table of 1 to max_size entries of type T, contiguous, on the data's device or the CPU.
template <class T>
Tensor CheckedTable(const Tensor& table, const Tensor& data, const char* name,
                    std::int64_t max_size) {
  if (table.dim() != 1) {
    Fail(std::string(name) + " must be a vector (rank 1); got rank " + std::to_string(table.dim()));
  }
  if (table.numel() < 1 || table.numel() > max_size) {
    Fail(std::string(name) + " must have 1 to " + std::to_string(max_size) + " entries; got " +
         std::to_string(table.numel()));
  }
  if (table.scalar_type() != ScalarTypeOf<T>()) {
    Fail(std::string(name) + " must have the dtype the op computes in (" +
         (ScalarTypeOf<T>() == ScalarType::Int ? "int32" : "the data's dtype") + ")");
  }
  if (!table.is_cpu() && table.get_device_index() != data.get_device_index()) {
    Fail(std::string(name) + " must be on the data's device or on the CPU");
  }
  if (data.is_cpu() && !table.is_cpu()) {
    Fail(std::string(name) + " must be on the CPU when the data is");
  }
  return Contiguous(table);
}

// The table as a launcher takes it. A CPU table counts as pageable whether or not it is pinned:
// the core then copies it into its own staging before the call returns, so the caller may free
// or reuse it at once.
template <class T>
TableView<T> ViewOf(const Tensor& table) {
  return {table.const_data_ptr<T>(), table.numel(),
          table.is_cpu() ? SourceKind::kPageableHost : SourceKind::kDevice};
}

// A table given as a static value (a schema list): the same values come again on every call, so
// the core compares them with what a bank slot holds and skips the copy.
template <class T>
TableView<T> StaticView(const std::vector<T>& values) {
  return {values.data(), static_cast<std::int64_t>(values.size()), SourceKind::kPageableHost,
          /*repeats=*/true};
}

template <class T, class Source>
std::vector<T> StaticTable(const std::vector<Source>& values, const char* name,
                           std::int64_t max_size) {
  if (values.empty() || static_cast<std::int64_t>(values.size()) > max_size) {
    Fail(std::string(name) + " must have 1 to " + std::to_string(max_size) + " entries; got " +
         std::to_string(values.size()));
  }
  // Floating-point values round to nearest (float64 lists for float32 data); integers must fit.
  std::vector<T> converted(values.begin(), values.end());
  if constexpr (std::is_integral_v<T>) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (static_cast<Source>(converted[i]) != values[i]) {
        Fail(std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(values[i]) +
             " does not fit int32");
      }
    }
  }
  return converted;
}

// PyTorch's current stream on the tensor's device: never the legacy default stream.
GpuStream CurrentStream(const Tensor& tensor);

// fn(begin, end) over [0, count) on PyTorch's intra-op threads, in ranges of about `grain`.
template <class Fn>
void ShardOnCpuThreads(std::int64_t count, std::int64_t cost_per_element, const Fn& fn) {
  // About 32 K operations a range amortise a task's start.
  const std::int64_t grain =
      std::max<std::int64_t>(1, 32768 / std::max<std::int64_t>(1, cost_per_element));
  torch::stable::parallel_for(0, count, grain, fn);
}

}  // namespace torch_binding
}  // namespace constmem

// SPDX-License-Identifier: Apache-2.0
// Frobulate's arithmetic, shared by the CPU kernel, the GPU test and the benchmarks. Plain C++:
// no TensorFlow and no CUDA include.
//
//   out[i] = (((data[i] + table[0]) + table[1]) + ... + table[n-1])
//
// evaluated left to right in T, each table entry converted to T first. The GPU kernel performs the
// same operations in the same order, so the two agree bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "constmem/strategy.hpp"

#pragma GCC visibility push(hidden)
namespace constmem {
namespace ops {

// The longest table Frobulate accepts: every op's limit. Tables beyond its constant bank (16,384
// entries) are read from global memory.
constexpr std::int64_t kFrobulateMaxTableSize = kMaxTableEntries;
// The kernel indexes with int64 and steps by the grid size; below 2^62 that arithmetic cannot
// overflow.
constexpr std::int64_t kFrobulateMaxElements = std::int64_t{1} << 62;

template <class T>
inline T FrobulateElement(T value, const std::int32_t* table, std::int64_t table_size) {
  for (std::int64_t j = 0; j < table_size; ++j) value = value + static_cast<T>(table[j]);
  return value;
}

template <class T>
void FrobulateRange(const T* data, T* out, std::int64_t begin, std::int64_t end,
                    const std::int32_t* table, std::int64_t table_size) {
  for (std::int64_t i = begin; i < end; ++i) out[i] = FrobulateElement(data[i], table, table_size);
}

}  // namespace ops
}  // namespace constmem
#pragma GCC visibility pop

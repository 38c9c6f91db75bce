// SPDX-License-Identifier: Apache-2.0
// The TensorFlow side of constmem: how a table reaches a CPU kernel or a GPU launcher from an op's
// input or attr, with TensorFlow's allocator, stream and event manager. An op's kernels hold a
// TableOperand (one per table) and use it in a few lines:
//
//   MyGpuKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
//     OP_REQUIRES_OK(ctx, taps_.Init(ctx, kFrom, /*input_index=*/1, "taps", kMaxTaps));
//   }
//   void Compute(OpKernelContext* ctx) override {
//     GpuTableArgument<float> taps;
//     OP_REQUIRES_OK(ctx, taps_.PrepareGpu(ctx, MyPlacement, &taps));
//     ... allocate the output ...
//     OP_REQUIRES_OK(ctx, LaunchOnComputeStream(ctx, [&](GpuStream stream) {
//       return LaunchMyOp(stream, ..., taps.view());   // the op's .cu launcher
//     }));
//   }
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "adapter/gpu_table.h"
#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/types.h"

namespace constmem {
namespace tf_adapter {

// Maps a core Status onto the TensorFlow error of the same meaning, keeping the CUDA error text.
absl::Status ToTfStatus(const Status& status);

// A table input must be a vector of `min_size` (1 unless an op needs more) to `max_size` entries.
absl::Status ValidateTableShape(const tensorflow::TensorShape& shape, const char* name,
                                std::int64_t max_size, std::int64_t min_size = 1);
absl::Status ValidateTableSize(std::int64_t size, const char* name, std::int64_t max_size,
                               std::int64_t min_size = 1);
// The same check at graph construction, where dimensions may be unknown.
absl::Status InferTableShape(tensorflow::shape_inference::InferenceContext* c, int input_index,
                             const char* name, std::int64_t max_size, std::int64_t min_size = 1);

// TensorFlow's CUDA stream for this op, as the raw handle our launchers take.
GpuStream ComputeStream(tensorflow::OpKernelContext* ctx);

// Decides where a placement function puts a table: (size, source) -> placement.
using PlacementFn = std::function<Placement(std::int64_t, SourceKind)>;

// A table prepared for one launch, from whichever of the three sources it came:
//   - an input in device memory: passed through, to be read in place or copied device-to-device
//     as the launcher's strategy decides;
//   - an input in host memory (registered with HostMemory): read directly into a by-value
//     parameter when small, otherwise copied into pinned memory from TensorFlow's own allocator
//     (allocate_temp, on_host + gpu_compatible) for an asynchronous copy;
//   - host values owned by the kernel (an attr, or a table computed in Compute): handed to the
//   core,
//     whose own pinned staging is reused only after its copy ran, and whose bank skips a copy when
//     a slot already holds the same bytes.
template <class T>
class GpuTableArgument {
 public:
  GpuTableArgument() = default;
  GpuTableArgument(const GpuTableArgument&) = delete;
  GpuTableArgument& operator=(const GpuTableArgument&) = delete;
  // On every path, also when the launch failed after the copy was queued: the staging tensor
  // stays referenced until the stream has passed that copy.
  ~GpuTableArgument() {
    if (staged_) KeepAliveUntilStreamPasses(ctx_);
  }

  absl::Status PrepareInput(tensorflow::OpKernelContext* ctx, int input_index, const char* name,
                            std::int64_t max_size, std::int64_t min_size,
                            const PlacementFn& placement);
  absl::Status PrepareHostValues(const T* values, std::int64_t size, const char* name,
                                 std::int64_t max_size, std::int64_t min_size);

  const TableView<T>& view() const { return view_; }

  // After the launch (the destructor does it otherwise): keeps the pinned staging tensor
  // referenced until the stream has executed the copy that reads it (EventMgr::ThenExecute, as
  // TensorFlow's own GpuDeviceArrayOnHost does), then lets TensorFlow's allocator reuse it.
  void KeepAliveUntilStreamPasses(tensorflow::OpKernelContext* ctx);

 private:
  TableView<T> view_;
  tensorflow::Tensor staging_;
  tensorflow::OpKernelContext* ctx_ = nullptr;
  bool staged_ = false;
};

extern template class GpuTableArgument<std::int32_t>;
extern template class GpuTableArgument<float>;
extern template class GpuTableArgument<double>;

// Runs fn(begin, end) over elements [0, count) on the CPU device's worker threads, in shards that
// TensorFlow sizes from each element's cost (about the cycles it takes): a CPU kernel's loop.
void ShardOnCpuWorkers(tensorflow::OpKernelContext* ctx, std::int64_t count,
                       std::int64_t cost_per_element,
                       const std::function<void(std::int64_t, std::int64_t)>& fn);

// Runs an op's launcher on TensorFlow's CUDA stream for this op and maps its Status. Refuses a
// null stream: that would be the legacy default stream, which synchronises with everything.
absl::Status LaunchOnComputeStream(tensorflow::OpKernelContext* ctx,
                                   const std::function<Status(GpuStream)>& launch);

// Where a kernel takes its table from: an input (in device memory, or in host memory when the
// kernel is registered with HostMemory), or an attr fixed per node.
enum class TableFrom { kInput, kAttr };

// One table operand of an op. Attr tables are read and checked once, when the kernel is built
// (ReadAttrTable).
template <class T>
class TableOperand {
 public:
  absl::Status Init(tensorflow::OpKernelConstruction* ctx, TableFrom from, int input_index,
                    const char* name, std::int64_t max_size, std::int64_t min_size = 1);

  // The values on the host, for a CPU kernel: the attr's, or the input's (checked).
  absl::Status HostValues(tensorflow::OpKernelContext* ctx, const T** values,
                          std::int64_t* size) const;
  // An attr table's values (empty for an input), for kernels that precompute from them once.
  const std::vector<T>& attr_values() const { return attr_values_; }
  // The table for a GPU launcher.
  absl::Status PrepareGpu(tensorflow::OpKernelContext* ctx, const PlacementFn& placement,
                          GpuTableArgument<T>* argument) const;

 private:
  TableFrom from_ = TableFrom::kInput;
  int input_index_ = 0;
  const char* name_ = "table";
  std::int64_t max_size_ = 0;
  std::int64_t min_size_ = 1;
  std::vector<T> attr_values_;
};

extern template class TableOperand<std::int32_t>;
extern template class TableOperand<float>;
extern template class TableOperand<double>;

// Reads an attr table of T and checks its length; `Context` is an OpKernelConstruction or a shape
// function's InferenceContext. Every table attr is a list(int), the one attr type that keeps every
// value exact and that eager execution passes (a `tensor` attr it does not): int32 tables hold the
// values, float tables the IEEE-754 bit patterns of T (float32 in the low 32 bits).
template <class T, class Context>
absl::Status ReadAttrTable(Context* ctx, const char* name, std::int64_t max_size,
                           std::vector<T>* values, std::int64_t min_size = 1) {
  if constexpr (std::is_same<T, std::int32_t>::value) {
    TF_RETURN_IF_ERROR(ctx->GetAttr(name, values));
  } else {
    static_assert(std::is_floating_point<T>::value, "int32 or floating-point tables");
    std::vector<std::int64_t> bits;
    TF_RETURN_IF_ERROR(ctx->GetAttr(name, &bits));
    values->resize(bits.size());
    for (std::size_t i = 0; i < bits.size(); ++i) {
      using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
      const Bits pattern = static_cast<Bits>(bits[i]);
      std::memcpy(&(*values)[i], &pattern, sizeof(T));
    }
  }
  return ValidateTableSize(static_cast<std::int64_t>(values->size()), name, max_size, min_size);
}

}  // namespace tf_adapter
}  // namespace constmem

// SPDX-License-Identifier: Apache-2.0
// The TensorFlow side of constmem: how a table reaches a GPU launcher from an op's input or attr,
// with TensorFlow's allocator, stream and event manager. Every constmem op reuses it:
//
//   GpuTableArgument<int32_t> table;
//   OP_REQUIRES_OK(ctx, table.PrepareInput(ctx, /*input_index=*/1, "table", max_size, placement));
//   OP_REQUIRES_OK(ctx, ToTfStatus(LaunchMyOp(ComputeStream(ctx), ..., table.view())));
//   table.KeepAliveUntilStreamPasses(ctx);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "adapter/gpu_table.h"
#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor.h"

namespace constmem {
namespace tf_adapter {

// Maps a core Status onto the TensorFlow error of the same meaning, keeping the CUDA error text.
absl::Status ToTfStatus(const Status& status);

// A table input must be a vector of 1 to `max_size` entries.
absl::Status ValidateTableShape(const tensorflow::TensorShape& shape, const char* name,
                                std::int64_t max_size);
absl::Status ValidateTableSize(std::int64_t size, const char* name, std::int64_t max_size);
// The same check at graph construction, where dimensions may be unknown.
absl::Status InferTableShape(tensorflow::shape_inference::InferenceContext* c, int input_index,
                             const char* name, std::int64_t max_size);
// Rejects data with more elements than `max_elements` as soon as its shape is known.
absl::Status CheckElementCount(const tensorflow::TensorShape& shape, const char* name,
                               std::int64_t max_elements);
absl::Status InferElementCount(tensorflow::shape_inference::InferenceContext* c, int input_index,
                               const char* name, std::int64_t max_elements);

// TensorFlow's CUDA stream for this op, as the raw handle our launchers take.
ops::GpuStream ComputeStream(tensorflow::OpKernelContext* ctx);

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
                            std::int64_t max_size, const PlacementFn& placement);
  absl::Status PrepareHostValues(const T* values, std::int64_t size, const char* name,
                                 std::int64_t max_size);

  const ops::GpuTableView<T>& view() const { return view_; }

  // After the launch (the destructor does it otherwise): keeps the pinned staging tensor
  // referenced until the stream has executed the copy that reads it (EventMgr::ThenExecute, as
  // TensorFlow's own GpuDeviceArrayOnHost does), then lets TensorFlow's allocator reuse it.
  void KeepAliveUntilStreamPasses(tensorflow::OpKernelContext* ctx);

 private:
  ops::GpuTableView<T> view_;
  tensorflow::Tensor staging_;
  tensorflow::OpKernelContext* ctx_ = nullptr;
  bool staged_ = false;
};

extern template class GpuTableArgument<std::int32_t>;

}  // namespace tf_adapter
}  // namespace constmem

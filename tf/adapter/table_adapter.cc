// SPDX-License-Identifier: Apache-2.0
#include "adapter/table_adapter.h"

#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "constmem/stats.hpp"
#include "tensorflow/core/common_runtime/device/device_event_mgr.h"
#include "tensorflow/core/framework/device_base.h"
#include "tensorflow/core/util/work_sharder.h"
#include "xla/stream_executor/stream.h"

namespace constmem {
namespace tf_adapter {

absl::Status ToTfStatus(const Status& status) {
  if (status.ok()) return absl::OkStatus();
  std::string message = "constmem: " + status.message();
  if (!status.cuda_error().empty()) message += " (" + status.cuda_error() + ")";
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      return absl::InvalidArgumentError(message);
    case StatusCode::kResourceExhausted:
      return absl::ResourceExhaustedError(message);
    case StatusCode::kFailedPrecondition:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status ValidateTableSize(std::int64_t size, const char* name, std::int64_t max_size,
                               std::int64_t min_size) {
  if (size < min_size || size > max_size) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must have ", min_size, " to ", max_size, " entries; got ", size));
  }
  return absl::OkStatus();
}

absl::Status ValidateTableShape(const tensorflow::TensorShape& shape, const char* name,
                                std::int64_t max_size, std::int64_t min_size) {
  if (shape.dims() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be a vector (rank 1); got shape ",
                                                   shape.DebugString(), " of rank ", shape.dims()));
  }
  return ValidateTableSize(shape.dim_size(0), name, max_size, min_size);
}

absl::Status InferTableShape(tensorflow::shape_inference::InferenceContext* c, int input_index,
                             const char* name, std::int64_t max_size, std::int64_t min_size) {
  tensorflow::shape_inference::ShapeHandle table = c->input(input_index);
  if (c->RankKnown(table) && c->Rank(table) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be a vector (rank 1); got shape ",
                                                   c->DebugString(table), " of rank ",
                                                   c->Rank(table)));
  }
  if (c->RankKnown(table) && c->ValueKnown(c->Dim(table, 0))) {
    return ValidateTableSize(c->Value(c->Dim(table, 0)), name, max_size, min_size);
  }
  return absl::OkStatus();
}

GpuStream ComputeStream(tensorflow::OpKernelContext* ctx) {
  stream_executor::Stream* stream = ctx->op_device_context()->stream();
  return static_cast<GpuStream>(stream->platform_specific_handle().stream);
}

template <class T>
absl::Status GpuTableArgument<T>::PrepareInput(tensorflow::OpKernelContext* ctx, int input_index,
                                               const char* name, std::int64_t max_size,
                                               std::int64_t min_size,
                                               const PlacementFn& placement) {
  const tensorflow::Tensor& input = ctx->input(input_index);
  TF_RETURN_IF_ERROR(ValidateTableShape(input.shape(), name, max_size, min_size));
  const T* values = input.flat<T>().data();
  const std::int64_t size = input.NumElements();
  if (ctx->input_memory_type(input_index) == tensorflow::DEVICE_MEMORY) {
    view_ = {values, size, SourceKind::kDevice};
    return absl::OkStatus();
  }
  // A host input small enough to pass by value is read at launch; nothing needs staging.
  if (placement(size, SourceKind::kPageableHost) == Placement::kByValue) {
    view_ = {values, size, SourceKind::kPageableHost};
    return absl::OkStatus();
  }
  // allocate_output would give device memory on a GPU op, and an output is a result the graph
  // sees. A temp with on_host + gpu_compatible comes from TensorFlow's pinned host allocator.
  tensorflow::AllocatorAttributes pinned;
  pinned.set_on_host(true);
  pinned.set_gpu_compatible(true);
  TF_RETURN_IF_ERROR(ctx->allocate_temp(tensorflow::DataTypeToEnum<T>::value,
                                        tensorflow::TensorShape({size}), &staging_, pinned));
  std::memcpy(staging_.flat<T>().data(), values, size * sizeof(T));
  staged_ = true;
  ctx_ = ctx;
  view_ = {staging_.flat<T>().data(), size, SourceKind::kPinnedHost};
  return absl::OkStatus();
}

template <class T>
absl::Status GpuTableArgument<T>::PrepareHostValues(const T* values, std::int64_t size,
                                                    const char* name, std::int64_t max_size,
                                                    std::int64_t min_size) {
  TF_RETURN_IF_ERROR(ValidateTableSize(size, name, max_size, min_size));
  view_ = {values, size, SourceKind::kPageableHost, /*repeats=*/true};
  return absl::OkStatus();
}

template <class T>
void GpuTableArgument<T>::KeepAliveUntilStreamPasses(tensorflow::OpKernelContext* ctx) {
  if (!staged_) return;
  staged_ = false;
#if CONSTMEM_WITH_GPU
  auto* event_mgr = ctx->device()->tensorflow_accelerator_device_info()->event_mgr;
#ifdef CONSTMEM_TESTING_SWITCHES
  // Test builds check that TensorFlow's allocator gave pinned memory and, with a marker the
  // callback queries without waiting, that the copy really ran before the release.
  ops::StreamMarker* marker = nullptr;
  if (!ops::RecordStreamMarker(ComputeStream(ctx), &marker).ok()) marker = nullptr;
  const bool pinned = ops::IsPinnedHost(staging_.flat<T>().data());
  Count(pinned ? Counter::kStagingPinnedVerified : Counter::kStagingNotPinned);
  event_mgr->ThenExecute(
      ctx->op_device_context()->stream(), [staging = std::move(staging_), marker]() mutable {
        if (marker != nullptr) {
          Count(ops::StreamPassedMarkerAndFree(marker) ? Counter::kStagingReleasedAfterCopy
                                                       : Counter::kStagingReleasedEarly);
        }
        staging = tensorflow::Tensor();  // back to TensorFlow's allocator
      });
#else
  event_mgr->ThenExecute(ctx->op_device_context()->stream(),
                         [staging = std::move(staging_)]() mutable {
                           staging = tensorflow::Tensor();  // back to TensorFlow's allocator
                         });
#endif
#else
  (void)ctx;  // without GPU kernels nothing is ever staged
#endif
}

template class GpuTableArgument<std::int32_t>;
template class GpuTableArgument<float>;
template class GpuTableArgument<double>;

void ShardOnCpuWorkers(tensorflow::OpKernelContext* ctx, std::int64_t count,
                       std::int64_t cost_per_element,
                       const std::function<void(std::int64_t, std::int64_t)>& fn) {
  auto* workers = ctx->device()->tensorflow_cpu_worker_threads()->workers;
  tensorflow::Shard(workers->NumThreads(), workers, count, cost_per_element, fn);
}

absl::Status LaunchOnComputeStream(tensorflow::OpKernelContext* ctx,
                                   const std::function<Status(GpuStream)>& launch) {
  const GpuStream stream = ComputeStream(ctx);
  if (stream == nullptr) {
    return absl::FailedPreconditionError("constmem: TensorFlow gave no CUDA compute stream");
  }
  return ToTfStatus(launch(stream));
}

template <class T>
absl::Status TableOperand<T>::Init(tensorflow::OpKernelConstruction* ctx, TableFrom from,
                                   int input_index, const char* name, std::int64_t max_size,
                                   std::int64_t min_size) {
  from_ = from;
  input_index_ = input_index;
  name_ = name;
  max_size_ = max_size;
  min_size_ = min_size;
  if (from != TableFrom::kAttr) return absl::OkStatus();
  return ReadAttrTable(ctx, name, max_size, &attr_values_, min_size);
}

template <class T>
absl::Status TableOperand<T>::HostValues(tensorflow::OpKernelContext* ctx, const T** values,
                                         std::int64_t* size) const {
  if (from_ == TableFrom::kAttr) {
    *values = attr_values_.data();
    *size = static_cast<std::int64_t>(attr_values_.size());
    return absl::OkStatus();
  }
  const tensorflow::Tensor& input = ctx->input(input_index_);
  TF_RETURN_IF_ERROR(ValidateTableShape(input.shape(), name_, max_size_, min_size_));
  *values = input.flat<T>().data();
  *size = input.NumElements();
  return absl::OkStatus();
}

template <class T>
absl::Status TableOperand<T>::PrepareGpu(tensorflow::OpKernelContext* ctx,
                                         const PlacementFn& placement,
                                         GpuTableArgument<T>* argument) const {
  if (from_ == TableFrom::kInput) {
    return argument->PrepareInput(ctx, input_index_, name_, max_size_, min_size_, placement);
  }
  return argument->PrepareHostValues(attr_values_.data(),
                                     static_cast<std::int64_t>(attr_values_.size()), name_,
                                     max_size_, min_size_);
}

template class TableOperand<std::int32_t>;
template class TableOperand<float>;
template class TableOperand<double>;

}  // namespace tf_adapter
}  // namespace constmem

// SPDX-License-Identifier: Apache-2.0
// The adapter's few CUDA calls, made through our own (static) CUDA runtime. All of them exist for
// test builds only (CONSTMEM_TESTING_SWITCHES): they check TensorFlow's pinned staging and arm the
// core's fault injection.
#include <cuda_runtime.h>

#include <string>

#include "adapter/gpu_table.h"
#include "constmem/cuda_support.cuh"

#ifdef CONSTMEM_TESTING_SWITCHES
namespace constmem {
namespace ops {

class StreamMarker {
 public:
  cudaEvent_t event = nullptr;
};

Status RecordStreamMarker(GpuStream stream, StreamMarker** marker) {
  int device = 0;
  CONSTMEM_RETURN_IF_ERROR(StreamDevice(stream, &device));
  ScopedDevice guard(device);
  CONSTMEM_RETURN_IF_ERROR(guard.status());
  auto* created = new StreamMarker;
  Status status = CudaStatus(cudaEventCreateWithFlags(&created->event, cudaEventDisableTiming),
                             "cudaEventCreate(marker)");
  if (status.ok())
    status = CudaStatus(cudaEventRecord(created->event, stream), "cudaEventRecord(marker)");
  if (!status.ok()) {
    if (created->event != nullptr) cudaEventDestroy(created->event);
    delete created;
    return status;
  }
  *marker = created;
  return Status::Ok();
}

bool IsPinnedHost(const void* pointer) { return IsPinnedHostMemory(pointer); }

bool StreamPassedMarkerAndFree(StreamMarker* marker) {
  const bool passed = cudaEventQuery(marker->event) == cudaSuccess;
  cudaGetLastError();
  cudaEventDestroy(marker->event);
  delete marker;
  return passed;
}

Status InjectFaultForTesting(int point, int nth) {
  if (point < 0 || point >= static_cast<int>(FaultPoint::kCount)) {
    return InvalidArgument("unknown fault point " + std::to_string(point));
  }
  ::constmem::InjectFaultForTesting(static_cast<FaultPoint>(point), nth);
  return Status::Ok();
}

}  // namespace ops
}  // namespace constmem
#endif

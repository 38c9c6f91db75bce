// SPDX-License-Identifier: Apache-2.0
// Plain C++ types that cross from TensorFlow kernels (g++) into CUDA launchers (nvcc).
#pragma once

#include <cstdint>

#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/table.hpp"

namespace constmem {
namespace ops {

#ifdef CONSTMEM_TESTING_SWITCHES
// Test builds only: what the staging checks and the fault-injection op call.
// True when CUDA knows `pointer` as page-locked host memory.
bool IsPinnedHost(const void* pointer);

// A point in a stream's work, to learn later without waiting whether the stream has passed it.
class StreamMarker;
Status RecordStreamMarker(GpuStream stream, StreamMarker** marker);
// True once the stream has executed everything enqueued before the marker. Frees the marker.
bool StreamPassedMarkerAndFree(StreamMarker* marker);

// Makes the `nth` next CUDA call at fault point `point` (constmem::FaultPoint) inside this
// library fail; 0 disarms. InvalidArgument for an unknown point.
Status InjectFaultForTesting(int point, int nth);
#endif

}  // namespace ops
}  // namespace constmem

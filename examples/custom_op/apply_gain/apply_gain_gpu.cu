// SPDX-License-Identifier: Apache-2.0
// ApplyGain's CUDA kernel: every thread of a row reads that row's gain, a warp-uniform read (what
// constant memory broadcasts) except where a warp straddles two rows.
#include <cuda_runtime.h>

#include "apply_gain/apply_gain_launcher.h"
#include "constmem/constmem.cuh"
#include "constmem/dispatch.cuh"

// Four slots of 1,024 gains (16 KiB): four streams at once with up to 1,024 rows each.
CONSTMEM_DEFINE_BANK(gain_table, float, 1024, 4);

namespace example {
namespace {

using GainsByValue = constmem::ByValueTable<float, 1024>;

template <class Gains>
__global__ void ApplyGainKernel(const float* x, float* y, std::int64_t count,
                                std::int64_t row_length, const __grid_constant__ Gains gains) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    y[i] = x[i] * gains[static_cast<int>(i / row_length)];
  }
}

}  // namespace

constmem::Placement ApplyGainPlacement(std::int64_t count, constmem::SourceKind source) {
  constmem::StrategyLimits limits;
  limits.constant_bank_bytes = gain_table_bank::kBytes;
  return constmem::ChoosePlacementFor<float>(count, source, limits);
}

constmem::Status LaunchApplyGain(constmem::GpuStream stream, const float* x, float* y,
                                 std::int64_t rows, std::int64_t row_length,
                                 const constmem::TableView<float>& gains) {
  if (gains.size != rows) return constmem::InvalidArgument("ApplyGain needs one gain per row");
  if (rows == 0 || row_length == 0) return constmem::Status::Ok();
  const std::int64_t count = rows * row_length;
  return constmem::LaunchWithTable<GainsByValue, gain_table_bank>(
      stream, gains, ApplyGainPlacement(gains.size, gains.source),
      [&](int device, const auto& reader) {
        const int threads = 256;
        const constexpr auto kernel = ApplyGainKernel<std::decay_t<decltype(reader)>>;
        int resident = 0;
        CONSTMEM_RETURN_IF_ERROR(constmem::ResidentBlocks<kernel>(threads, device, &resident));
        const dim3 grid = constmem::PersistentGrid((count + threads - 1) / threads, resident);
        kernel<<<grid, threads, 0, stream>>>(x, y, count, row_length, reader);
        return constmem::CudaStatus(cudaGetLastError(), "ApplyGain launch");
      });
}

}  // namespace example

// SPDX-License-Identifier: Apache-2.0
#include "bench_common.cuh"
#include "constmem/constmem.cuh"

CONSTMEM_DEFINE_BANK(bench_bank, std::int32_t, 4096, 4);

namespace bench {

constmem::Status ConstmemUploadAndLaunch(cudaStream_t stream, const std::int32_t* source, int n,
                                         constmem::SourceKind kind, bool dedupe, long long* out) {
  constmem::Lease<std::int32_t> lease;
  CONSTMEM_RETURN_IF_ERROR(bench_bank().Acquire(stream, n, dedupe ? source : nullptr, &lease));
  CONSTMEM_RETURN_IF_ERROR(lease.Upload(source, n, kind));
  Consume<<<1, 32, 0, stream>>>(bench_bank_reader{lease.offset()}, n, out);
  CONSTMEM_RETURN_IF_CUDA_ERROR(cudaGetLastError(), "launch");
  return lease.Release();
}

}  // namespace bench

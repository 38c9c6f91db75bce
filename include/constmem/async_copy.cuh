// SPDX-License-Identifier: Apache-2.0
// Device helpers for kernels that stage tiles in shared memory: asynchronous global-to-shared
// copies with zero fill (cp.async, sm_80 and newer; a plain copy before), 16-byte shared loads from
// a 32-bit shared address, bulk copies (sm_90 and newer) and an optimisation barrier for
// addresses. CUDA's own wrappers take the zero fill as a compile-time constant
// (`__pipeline_memcpy_async`) or have no zero fill (`cuda::memcpy_async`); a tile's edge needs it
// per copy, at run time. Compiled with CONSTMEM_EMULATED_GPU by the host compiler, they run on the
// CPU (constmem/testing/emulated_gpu.hpp): copies land when their thread waits for them.
#pragma once

#if defined(CONSTMEM_EMULATED_GPU)
#include "constmem/testing/emulated_gpu.hpp"
#else
#include <cuda_runtime.h>
#endif

#include <cstdint>

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

// The 16-byte vector of T that one load or store moves: float4 or double2.
template <class T>
struct Vector16;
template <>
struct Vector16<float> {
  using type = float4;
};
template <>
struct Vector16<double> {
  using type = double2;
};

// The block's dynamic shared memory, 16-byte aligned.
__device__ __forceinline__ unsigned char* DynamicSharedMemory() {
#if defined(CONSTMEM_EMULATED_GPU)
  return emulated_gpu::dynamic_shared;
#else
  extern __shared__ __align__(16) unsigned char constmem_dynamic_shared[];
  return constmem_dynamic_shared;
#endif
}

// Copies one Chunk (4, 8 or 16 bytes) from global memory to the 32-bit shared address
// `destination`, asynchronously on sm_80 and newer; with `inside` false it reads nothing and
// writes zeros. Unrolled rounds can offset `destination` by constants.
template <class Chunk>
__device__ __forceinline__ void CopyAsync(unsigned destination, const Chunk* global, bool inside) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int kBytes = sizeof(Chunk);
  const int source_bytes = inside ? kBytes : 0;
  if constexpr (kBytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(destination), "l"(global),
                 "r"(source_bytes)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(destination), "l"(global),
                 "n"(kBytes), "r"(source_bytes)
                 : "memory");
  }
#elif defined(CONSTMEM_EMULATED_GPU)
  emulated_gpu::CopyAsync(__cvta_shared_to_generic(destination), inside ? global : nullptr,
                          static_cast<int>(sizeof(Chunk)));
#else
  *static_cast<Chunk*>(__cvta_shared_to_generic(destination)) = inside ? *global : Chunk{};
#endif
}
template <class Chunk>
__device__ __forceinline__ void CopyAsync(Chunk* shared, const Chunk* global, bool inside) {
  CopyAsync(static_cast<unsigned>(__cvta_generic_to_shared(shared)), global, inside);
}
// Ends this thread's group of copies.
__device__ __forceinline__ void CopyAsyncCommit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#elif defined(CONSTMEM_EMULATED_GPU)
  emulated_gpu::CommitCopies();
#endif
}
// Waits for the copies of every group this thread committed but the newest kPending (a pipeline
// waits for a stage while the next one's copies are in flight).
template <int kPending>
__device__ __forceinline__ void CopyAsyncWaitPrior() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#elif defined(CONSTMEM_EMULATED_GPU)
  emulated_gpu::WaitCopies(kPending);
#endif
}
// Waits for every copy this thread issued (the team still synchronises before reading others').
__device__ __forceinline__ void CopyAsyncWaitAll() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#elif defined(CONSTMEM_EMULATED_GPU)
  emulated_gpu::WaitCopies(0);
#endif
}

// Bulk copies (sm_90 and newer): one thread moves a whole tile between global and shared memory,
// a load completing on a transaction barrier, so that the other threads issue nothing for it.
// Shared-memory addresses are 32-bit, as the kernels keep them in registers; sizes are whole
// 16-byte vectors. Declared everywhere, they do something only on sm_90 and newer: code for older
// GPUs must not reach them (`if constexpr (kBulkCopies)`).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CONSTMEM_BULK_COPIES 1
#else
#define CONSTMEM_BULK_COPIES 0
#endif
constexpr bool kBulkCopies = CONSTMEM_BULK_COPIES != 0;
__device__ __forceinline__ void BarrierInit(unsigned barrier) {
#if CONSTMEM_BULK_COPIES
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(barrier) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// Arms the barrier for `bytes` and starts their copy; with no bytes it completes the phase.
__device__ __forceinline__ void BulkLoad(unsigned destination, const void* source, unsigned bytes,
                                         unsigned barrier) {
#if CONSTMEM_BULK_COPIES
  if (bytes == 0) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(barrier) : "memory");
    return;
  }
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(barrier), "r"(bytes)
               : "memory");
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(destination),
      "l"(source), "r"(bytes), "r"(barrier)
      : "memory");
#endif
}
__device__ __forceinline__ void BarrierWait(unsigned barrier, unsigned parity) {
#if CONSTMEM_BULK_COPIES
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait;\n"
      "}\n" ::"r"(barrier),
      "r"(parity)
      : "memory");
#endif
}
// Makes this thread's shared-memory writes visible to bulk copies that follow.
__device__ __forceinline__ void FenceForBulkCopies() {
#if CONSTMEM_BULK_COPIES
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void BulkStore(void* destination, unsigned source, unsigned bytes) {
#if CONSTMEM_BULK_COPIES
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(destination),
               "r"(source), "r"(bytes)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}
// Waits until at most kPending bulk stores still read shared memory.
template <int kPending>
__device__ __forceinline__ void BulkStoresReadAll() {
#if CONSTMEM_BULK_COPIES
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(kPending) : "memory");
#endif
}
__device__ __forceinline__ void BulkStoresDone() {
#if CONSTMEM_BULK_COPIES
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif
}

// Hides how an address was computed, so that unrolled rounds address from it with constant
// offsets: otherwise the compiler recomputes it, 64-bit products included, in every round.
template <class P>
__device__ __forceinline__ P* HeldAddress(P* address) {
#if !defined(CONSTMEM_EMULATED_GPU)
  asm("" : "+l"(address));
#endif
  return address;
}
__device__ __forceinline__ unsigned HeldAddress(unsigned shared_address) {
#if !defined(CONSTMEM_EMULATED_GPU)
  asm("" : "+r"(shared_address));
#endif
  return shared_address;
}

// One 16-byte vector from a 32-bit shared-memory address, which stays in a register: from a C++
// pointer the compiler recomputes the block's shared-memory window for every load.
__device__ __forceinline__ void LoadShared(unsigned address, float4* vector) {
#if defined(CONSTMEM_EMULATED_GPU)
  std::memcpy(vector, __cvta_shared_to_generic(address), sizeof(*vector));
#else
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(vector->x), "=f"(vector->y), "=f"(vector->z), "=f"(vector->w)
               : "r"(address));
#endif
}
__device__ __forceinline__ void LoadShared(unsigned address, double2* vector) {
#if defined(CONSTMEM_EMULATED_GPU)
  std::memcpy(vector, __cvta_shared_to_generic(address), sizeof(*vector));
#else
  asm volatile("ld.shared.v2.f64 {%0, %1}, [%2];\n"
               : "=d"(vector->x), "=d"(vector->y)
               : "r"(address));
#endif
}

// One 16-byte vector to a 32-bit shared-memory address: a float4 store through a pointer may be
// split into words where the compiler also sees a word-by-word store of the same values.
__device__ __forceinline__ void StoreShared(unsigned address, const float4& vector) {
#if defined(CONSTMEM_EMULATED_GPU)
  std::memcpy(__cvta_shared_to_generic(address), &vector, sizeof(vector));
#else
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(address), "f"(vector.x),
               "f"(vector.y), "f"(vector.z), "f"(vector.w)
               : "memory");
#endif
}

}  // namespace constmem
#pragma GCC visibility pop

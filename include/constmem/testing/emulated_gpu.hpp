// SPDX-License-Identifier: Apache-2.0
// Runs CUDA kernels on the CPU, so that a machine without a GPU (CI's) executes their logic: tiles,
// borders, pipelines, barriers. Compile the kernels' device code with the host compiler and
// CONSTMEM_EMULATED_GPU defined (async_copy.cuh then includes this header, which gives the code
// CUDA's keywords and built-ins), and launch with constmem::emulated_gpu::Launch. Semantics:
//   - a block's threads are fibers on the calling thread, switched at __syncthreads() and
//     __syncwarp(); blocks run one after another, in a shuffled order;
//   - an asynchronous copy (CopyAsync) lands only when its thread waits for its committed group;
//     until then its destination holds the poison pattern; one whose addresses are not aligned
//     to its size throws, as cp.async faults;
//   - dynamic shared memory starts each block as poison (every bit set: NaN floats, -1 integers,
//     255 bytes), and a guard band after it is checked after each block; static __shared__ arrays
//     are static locals, kept from one block to the next;
//   - the threads run between two barriers in an order drawn afresh for each interval
//     (forward, backward, shuffled), so a missing barrier or wait shows as wrong results.
// Arithmetic is the host's (float FMAs are float FMAs, as on the GPU); __shfl_sync is emulated with
// two warp barriers. Not emulated: votes, atomics, constant memory, Hopper's bulk copies
// (kBulkCopies is false), streams; launches are synchronous. Not for production code.
#pragma once

#ifndef CONSTMEM_EMULATED_GPU
#error "emulated_gpu.hpp is for device code compiled with CONSTMEM_EMULATED_GPU defined"
#endif

#include <cuda_runtime.h>  // CUDA's int4, float4, dim3, ...; declared before the macros below
#include <math.h>          // the global fma(float, float, float) device code calls
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// CUDA's function and variable qualifiers (vector_types.h defined them as attributes).
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __shared__
#undef __launch_bounds__
#undef __grid_constant__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __grid_constant__

namespace constmem {
namespace emulated_gpu {

// Shared memory of the block being run: static __shared__ arrays become static locals, and the
// dynamic part is this buffer, within 2 GiB of them so that 32-bit shared addresses (offsets from
// its start) reach both.
constexpr std::size_t kMostDynamicShared = 228 * 1024;
constexpr std::size_t kGuardBytes = 4096;
constexpr unsigned char kPoison = 0xFF;
alignas(128) inline unsigned char dynamic_shared[kMostDynamicShared + kGuardBytes];

struct PendingCopy {
  unsigned char* destination;
  unsigned char bytes[16];
  int size;
  long group;  // the thread's committed groups when it was issued
};

struct Fiber {
  ucontext_t context;
  std::unique_ptr<char[]> stack;
  uint3 thread;
  enum class State { kRunnable, kAtBarrier, kAtWarpBarrier, kDone } state;
  std::vector<PendingCopy> copies;
  long committed_groups = 0;
  alignas(16) unsigned char shuffled[16];  // this lane's value in a __shfl_sync
};

class Block {
 public:
  static constexpr std::size_t kStackBytes = 256 * 1024;

  dim3 grid, block;
  uint3 block_index{};
  std::vector<Fiber> fibers;
  int current = 0;
  ucontext_t scheduler;
  std::function<void()> body;
  std::mt19937 random{12345};
  std::exception_ptr error;  // the first a thread threw: the launch throws it

  static Block*& Running() {
    static Block* running = nullptr;
    return running;
  }
  Fiber& Current() { return fibers[static_cast<std::size_t>(current)]; }

  // Runs every thread of block `index` to its end.
  void Run(uint3 index) {
    block_index = index;
    const unsigned count = block.x * block.y * block.z;
    if (fibers.size() != count) {
      fibers = std::vector<Fiber>(count);
      for (Fiber& f : fibers)
        f.stack.reset(new char[kStackBytes]);  // uninitialised: no page touched
    }
    for (unsigned t = 0; t < count; ++t) {
      Fiber& f = fibers[t];
      f.thread = uint3{t % block.x, t / block.x % block.y, t / (block.x * block.y)};
      f.state = Fiber::State::kRunnable;
      f.copies.clear();
      f.committed_groups = 0;
      getcontext(&f.context);
      f.context.uc_stack.ss_sp = f.stack.get();
      f.context.uc_stack.ss_size = kStackBytes;
      f.context.uc_link = &scheduler;
      makecontext(&f.context, &Block::FiberMain, 0);
    }
    std::vector<int> order(count);
    for (;;) {
      // The order drawn at random, not in turn: a loop with as many barriers a turn as there are
      // orders would meet each barrier in one order only.
      std::iota(order.begin(), order.end(), 0);
      const auto kind = random() % 3;
      if (kind == 1) std::reverse(order.begin(), order.end());
      if (kind == 2) std::shuffle(order.begin(), order.end(), random);
      for (int t : order) {
        if (fibers[static_cast<std::size_t>(t)].state != Fiber::State::kRunnable) continue;
        current = t;
        swapcontext(&scheduler, &fibers[static_cast<std::size_t>(t)].context);
      }
      if (!ReleaseBarriers()) break;
    }
  }

 private:
  static void FiberMain() {
    Block& b = *Running();
    try {
      b.body();
    } catch (...) {
      if (!b.error) b.error = std::current_exception();
    }
    Fiber& f = b.Current();
    for (const PendingCopy& c : f.copies) std::memcpy(c.destination, c.bytes, c.size);
    f.copies.clear();
    f.state = Fiber::State::kDone;  // uc_link returns to the scheduler
  }

  // Every live thread has stopped at a barrier: releases the warps whose live threads all wait at
  // __syncwarp, else, when every live thread waits at __syncthreads, those. False when every thread
  // has finished.
  bool ReleaseBarriers() {
    bool released = false, live = false;
    const std::size_t warps = (fibers.size() + 31) / 32;
    for (std::size_t w = 0; w < warps; ++w) {
      bool all_at_warp_barrier = true, any = false;
      for (std::size_t t = w * 32; t < std::min(fibers.size(), w * 32 + 32); ++t) {
        if (fibers[t].state == Fiber::State::kDone) continue;
        any = true;
        all_at_warp_barrier &= fibers[t].state == Fiber::State::kAtWarpBarrier;
      }
      if (!any || !all_at_warp_barrier) continue;
      for (std::size_t t = w * 32; t < std::min(fibers.size(), w * 32 + 32); ++t) {
        if (fibers[t].state == Fiber::State::kAtWarpBarrier)
          fibers[t].state = Fiber::State::kRunnable;
      }
      released = true;
    }
    if (released) return true;
    bool all_at_block_barrier = true;
    for (Fiber& f : fibers) {
      if (f.state == Fiber::State::kDone) continue;
      live = true;
      all_at_block_barrier &= f.state == Fiber::State::kAtBarrier;
    }
    if (!live) return false;
    if (!all_at_block_barrier) {
      throw std::logic_error(
          "emulated GPU: threads of one warp wait at __syncwarp while others wait at "
          "__syncthreads (a deadlock on a GPU)");
    }
    for (Fiber& f : fibers) {
      if (f.state == Fiber::State::kAtBarrier) f.state = Fiber::State::kRunnable;
    }
    return true;
  }
};

inline Block& Running() { return *Block::Running(); }

inline void Yield(Fiber::State state) {
  Block& b = Running();
  Fiber& f = b.Current();
  f.state = state;
  swapcontext(&f.context, &b.scheduler);
}

// Copies `size` bytes (4, 8 or 16) from `source`, or zeros where it is null, to `destination` when
// the issuing thread waits for the group (the source is read now: inputs do not change during a
// kernel); poisons the destination meanwhile.
// The extents of the FencedArrays alive: reads that cross or fall just past their ends are
// reported even where no fence page can catch them (an end inside a page).
inline std::vector<std::pair<const unsigned char*, const unsigned char*>>& Arrays() {
  static std::vector<std::pair<const unsigned char*, const unsigned char*>> arrays;
  return arrays;
}
constexpr std::ptrdiff_t kNearBytes = 64;
inline void CheckRead(const void* source, std::size_t size) {
  const auto* begin = static_cast<const unsigned char*>(source);
  const auto* end = begin + size;
  for (const auto& [first, last] : Arrays()) {
    const bool near = begin < last + kNearBytes && end > first - kNearBytes;
    if (near && (begin < first || end > last)) {
      throw std::out_of_range("emulated GPU: a read of " + std::to_string(size) +
                              " bytes at offset " + std::to_string(begin - first) +
                              " of an array of " + std::to_string(last - first) + " bytes");
    }
  }
}

inline void CopyAsync(void* destination, const void* source, int size) {
  Fiber& f = Running().Current();
  // cp.async needs both addresses aligned to its size (4, 8 or 16 bytes).
  const auto misaligned = [size](const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(size) != 0;
  };
  if (misaligned(destination) || (source != nullptr && misaligned(source))) {
    throw std::invalid_argument("emulated GPU: an asynchronous copy of " + std::to_string(size) +
                                " bytes from or to an address not aligned to its size");
  }
  if (source != nullptr) CheckRead(source, static_cast<std::size_t>(size));
  PendingCopy c{static_cast<unsigned char*>(destination), {}, size, f.committed_groups};
  if (source != nullptr) std::memcpy(c.bytes, source, static_cast<std::size_t>(size));
  std::memset(destination, kPoison, static_cast<std::size_t>(size));
  f.copies.push_back(c);
}
inline void CommitCopies() { ++Running().Current().committed_groups; }
// Lands every copy of this thread's committed groups but the newest `pending` ones.
inline void WaitCopies(long pending) {
  Fiber& f = Running().Current();
  const long done_below = f.committed_groups - pending;
  auto keep = f.copies.begin();
  for (auto it = f.copies.begin(); it != f.copies.end(); ++it) {
    if (it->group < done_below) {
      std::memcpy(it->destination, it->bytes, static_cast<std::size_t>(it->size));
    } else {
      *keep++ = *it;
    }
  }
  f.copies.erase(keep, f.copies.end());
}

// Runs kernel(args...) over `grid` blocks of `block` threads with `shared_bytes` of dynamic shared
// memory. Throws what a thread threw (std::out_of_range for a read past a FencedArray), or
// std::runtime_error where a block wrote past its dynamic shared memory.
template <class Kernel, class... Args>
void Launch(dim3 grid, dim3 block, std::size_t shared_bytes, Kernel kernel, Args... args) {
  if (shared_bytes > kMostDynamicShared) {
    throw std::invalid_argument("emulated GPU: " + std::to_string(shared_bytes) +
                                " bytes of dynamic shared memory; at most " +
                                std::to_string(kMostDynamicShared));
  }
  Block b;
  static unsigned launches = 0;
  b.random.seed(12345 + launches++);  // each launch its own orders, the same in every run
  b.grid = grid;
  b.block = block;
  b.body = [&] { kernel(args...); };
  Block* const outer = Block::Running();
  Block::Running() = &b;
  // Blocks in a shuffled order: a GPU promises none, and a block that writes into another's
  // outputs shows only where it runs after that one.
  std::vector<uint3> blocks;
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x) blocks.push_back(uint3{x, y, z});
    }
  }
  std::shuffle(blocks.begin(), blocks.end(), b.random);
  for (const uint3& index : blocks) {
    std::memset(dynamic_shared, kPoison, sizeof(dynamic_shared));
    b.Run(index);
    if (b.error) {
      Block::Running() = outer;
      std::rethrow_exception(b.error);
    }
    for (std::size_t i = shared_bytes; i < shared_bytes + kGuardBytes; ++i) {
      if (dynamic_shared[i] != kPoison) {
        Block::Running() = outer;
        throw std::runtime_error("emulated GPU: block (" + std::to_string(index.x) + ", " +
                                 std::to_string(index.y) + ", " + std::to_string(index.z) +
                                 ") wrote past its " + std::to_string(shared_bytes) +
                                 " bytes of dynamic shared memory, at byte " + std::to_string(i));
      }
    }
  }
  Block::Running() = outer;
}

// n elements of host memory flush against an inaccessible page, after their last element or
// before their first: a kernel that reads past that end of its input faults (what
// compute-sanitizer reports on a GPU) instead of reading a neighbour's bytes unnoticed. Emulated
// asynchronous copies and __ldg reads that cross either end, or land within 64 bytes of it, throw
// std::out_of_range.
template <class T>
class FencedArray {
 public:
  enum class Fence { kAfter, kBefore };
  FencedArray(std::size_t n, Fence fence) : n_(n) {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t data_pages = (n * sizeof(T) + page - 1) / page;
    bytes_ = (data_pages + 1) * page;
    void* mapped =
        mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) throw std::runtime_error("emulated GPU: mmap failed");
    base_ = static_cast<unsigned char*>(mapped);
    unsigned char* const fence_page = fence == Fence::kAfter ? base_ + data_pages * page : base_;
    mprotect(fence_page, page, PROT_NONE);
    data_ =
        reinterpret_cast<T*>(fence == Fence::kAfter ? fence_page - n * sizeof(T) : base_ + page);
    const auto* first = reinterpret_cast<const unsigned char*>(data_);
    Arrays().emplace_back(first, first + n * sizeof(T));
  }
  FencedArray(const FencedArray&) = delete;
  FencedArray& operator=(const FencedArray&) = delete;
  ~FencedArray() {
    const auto* first = reinterpret_cast<const unsigned char*>(data_);
    Arrays().erase(
        std::find(Arrays().begin(), Arrays().end(), std::make_pair(first, first + n_ * sizeof(T))));
    munmap(base_, bytes_);
  }
  T* data() { return data_; }
  std::size_t size() const { return n_; }

 private:
  std::size_t n_, bytes_;
  unsigned char* base_;
  T* data_;
};

// A table read where it lies in host memory: what a test hands a kernel in place of the readers of
// constant banks and by-value tables, which are not emulated.
template <class T>
struct HostTable {
  const T* values;
  T operator[](int i) const { return values[i]; }
};

inline const uint3& ThreadIndex() { return Running().Current().thread; }
inline const uint3& BlockIndex() { return Running().block_index; }
inline const dim3& BlockDim() { return Running().block; }
inline const dim3& GridDim() { return Running().grid; }

}  // namespace emulated_gpu
}  // namespace constmem

// CUDA's built-in variables and functions.
#define threadIdx (::constmem::emulated_gpu::ThreadIndex())
#define blockIdx (::constmem::emulated_gpu::BlockIndex())
#define blockDim (::constmem::emulated_gpu::BlockDim())
#define gridDim (::constmem::emulated_gpu::GridDim())
inline void __syncthreads() {
  ::constmem::emulated_gpu::Yield(::constmem::emulated_gpu::Fiber::State::kAtBarrier);
}
inline void __syncwarp(unsigned = 0xffffffffu) {
  ::constmem::emulated_gpu::Yield(::constmem::emulated_gpu::Fiber::State::kAtWarpBarrier);
}
// Each lane posts its value, the warp meets, each lane reads its source's, and the warp meets again
// before any lane can post another.
template <class T>
inline T __shfl_sync(unsigned, T value, int source, int width = 32) {
  static_assert(sizeof(T) <= 16, "a value of at most 16 bytes");
  auto& block = ::constmem::emulated_gpu::Running();
  const int self = block.current;
  std::memcpy(block.fibers[static_cast<std::size_t>(self)].shuffled, &value, sizeof(T));
  __syncwarp();
  const int lane = self % 32;
  const int from = self - lane + lane / width * width + source % width;
  T result;
  std::memcpy(&result, block.fibers[static_cast<std::size_t>(from)].shuffled, sizeof(T));
  __syncwarp();
  return result;
}
template <class T>
inline T __ldg(const T* p) {
  ::constmem::emulated_gpu::CheckRead(p, sizeof(T));
  return *p;
}
inline unsigned __cvta_generic_to_shared(const void* p) {
  return static_cast<unsigned>(static_cast<const unsigned char*>(p) -
                               ::constmem::emulated_gpu::dynamic_shared);
}
inline void* __cvta_shared_to_generic(unsigned address) {
  return ::constmem::emulated_gpu::dynamic_shared + static_cast<int>(address);
}
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }

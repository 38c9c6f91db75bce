// SPDX-License-Identifier: Apache-2.0
// Polyval's CUDA kernel and launcher: the core's elementwise table walk with Horner's rule. No
// framework header reaches nvcc.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "constmem/constmem.cuh"
#include "constmem/dispatch.cuh"
#include "constmem/elementwise.cuh"
#include "constmem/numeric.hpp"
#include "polyval/polyval_functor.h"
#include "polyval/polyval_launcher.h"

// Four slots per dtype: four streams evaluate polynomials of up to 1,024 coefficients at once; a
// longer one takes a run of slots. 16 KiB + 32 KiB of the module's 64 KiB.
CONSTMEM_DEFINE_FLOAT_BANKS(polyval_coeffs, 1024, 4);

namespace constmem {
namespace ops {
namespace {

// In: the data's type; T: the compute type.
template <class In, class T>
struct PolyvalStep {
  struct State {
    T x;
    T y;
  };
  // 32 floats, 32 halves or 16 doubles per thread: every coefficient read feeds that many
  // independent FMAs.
  static constexpr int kVectorsPerThread = sizeof(In) == 2 ? 4 : 8;
  static constexpr int kTableUnroll = 8;
  __device__ __forceinline__ static State Start(T x, T first) { return {x, first}; }
  __device__ __forceinline__ static void Step(State& state, T coeff) {
    state.y = fma(state.y, state.x, coeff);
  }
  __device__ __forceinline__ static T Finish(const State& state) { return state.y; }
};

template <class T>
StrategyLimits PolyvalLimits() {
  StrategyLimits limits;
  limits.constant_bank_bytes = polyval_coeffs_banks::Of<T>::kBytes;
  // One coefficient read feeds 32 FMAs: a warp-uniform read from L1 costs what a constant-cache
  // read costs, so a small device table is read where it is rather than copied first (the same
  // balance as Frobulate's; docs/performance.md).
  limits.device_in_place_bytes = kDefaultByValueBytes;
  return limits;
}

}  // namespace

template <class T>
Placement PolyvalPlacement(std::int64_t count, SourceKind source, std::int64_t launch_elements) {
  return ChoosePlacementFor<T>(count, source, PolyvalLimits<T>(), TableAccess::kUniform,
                               launch_elements);
}

template <class In, class T>
Status LaunchPolyvalWithPlacement(GpuStream stream, const In* x, In* y, std::int64_t count,
                                  const TableView<T>& coeffs, Placement placement,
                                  LaunchReport* report) {
  static_assert(std::is_same<T, ComputeTypeOf<In>>::value, "In is computed in ComputeTypeOf<In>");
  if (report != nullptr) *report = LaunchReport(placement);
  if (coeffs.values == nullptr || coeffs.size < 1 || coeffs.size > kPolyvalMaxCoefficients) {
    return InvalidArgument("Polyval needs 1 to " + std::to_string(kPolyvalMaxCoefficients) +
                           " coefficients; got " + std::to_string(coeffs.size));
  }
  if (count < 0 || count > kPolyvalMaxElements) {
    return InvalidArgument("Polyval handles at most 2^62 elements; got " + std::to_string(count));
  }
  if (count == 0) return Status::Ok();
  // Host coefficients up to 4 KiB travel as a kernel parameter.
  return LaunchWithTable<DefaultByValueTable<T>, polyval_coeffs_banks::Of<T>>(
      stream, coeffs, placement,
      [&](int device, const auto& reader) {
        return LaunchElementwiseTable<PolyvalStep<In, T>>(device, stream, x, y, count,
                                                          static_cast<int>(coeffs.size), reader);
      },
      report);
}

template <class In, class T>
Status LaunchPolyval(GpuStream stream, const In* x, In* y, std::int64_t count,
                     const TableView<T>& coeffs, LaunchReport* report) {
  return LaunchPolyvalWithPlacement(stream, x, y, count, coeffs,
                                    PolyvalPlacement<T>(coeffs.size, coeffs.source, count), report);
}

template Placement PolyvalPlacement<float>(std::int64_t, SourceKind, std::int64_t);
template Placement PolyvalPlacement<double>(std::int64_t, SourceKind, std::int64_t);

#define CONSTMEM_INSTANTIATE_POLYVAL(In, T)                                     \
  template Status LaunchPolyval<In, T>(GpuStream, const In*, In*, std::int64_t, \
                                       const TableView<T>&, LaunchReport*);     \
  template Status LaunchPolyvalWithPlacement<In, T>(                            \
      GpuStream, const In*, In*, std::int64_t, const TableView<T>&, Placement, LaunchReport*);
CONSTMEM_INSTANTIATE_POLYVAL(float, float)
CONSTMEM_INSTANTIATE_POLYVAL(double, double)
CONSTMEM_INSTANTIATE_POLYVAL(Float16, float)
CONSTMEM_INSTANTIATE_POLYVAL(BFloat16, float)
#undef CONSTMEM_INSTANTIATE_POLYVAL

}  // namespace ops
}  // namespace constmem

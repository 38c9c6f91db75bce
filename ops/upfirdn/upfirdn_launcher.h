// SPDX-License-Identifier: Apache-2.0
// The plain C++ interface between Upfirdn's framework kernels (host compiler) and its CUDA code
// (nvcc, no framework header). The stream is the framework's raw CUDA stream.
#pragma once

#include <cstddef>
#include <cstdint>

#include "constmem/numeric.hpp"
#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/table.hpp"
#include "upfirdn/upfirdn_functor.h"

namespace constmem {
namespace ops {

// How the GPU kernel's lanes take outputs. Consecutive outputs have different phases, so their
// taps differ:
//   kPhasePerWarp: the lanes of a warp take outputs of one phase (outputs c + s * P for one c), so
//     every lane reads the same tap at a time: a broadcast from any table placement (by value, a
//     constant bank, global or shared memory). It needs tiles of at least 32 * 7 outputs of each
//     phase, which fit the 32 KiB a block stages (plus the halo) when 2 Q + P is small: up to
//     about 36 for float32, 18 for float64.
//   kPhasePerLane: lanes take outputs of consecutive phases, each reading its own taps: the taps
//     go to shared memory (or global memory); tiles need only 7 outputs of each phase. For rates
//     such as 160/147, whose P + Q is too large for the other.
//   kDirect: no tile: one output a thread, its samples and taps read where they are, for shapes
//     whose smallest tile does not fit shared memory (one output of each phase, Q samples and the
//     halo, or past 2,048 terms a phase a chunk of 2,048 terms of it: rates whose P + Q is
//     tens of thousands), or whose indices pass int. Any
//     placement; consecutive lanes read the taps of consecutive phases, so shared or global memory
//     serves it best.
//   kAuto: kDirect where no tile fits, else kPhasePerWarp where its tiles fit, else
//     kPhasePerLane (with a table in shared or global memory; a table by value or in a constant
//     bank always takes kPhasePerWarp).
enum class UpfirdnArrangement { kAuto, kPhasePerWarp, kPhasePerLane, kDirect };

inline const char* UpfirdnArrangementName(UpfirdnArrangement arrangement) {
  switch (arrangement) {
    case UpfirdnArrangement::kPhasePerWarp:
      return "phase_per_warp";
    case UpfirdnArrangement::kPhasePerLane:
      return "phase_per_lane";
    case UpfirdnArrangement::kDirect:
      return "direct";
    case UpfirdnArrangement::kAuto:
      break;
  }
  return "auto";
}

// Enqueues y = upfirdn(taps, x, shape.up, shape.down) along the last axis on `stream` and returns
// without waiting: `x` holds shape.rows x shape.length samples, `y` shape.rows x shape.outputs
// outputs; `shape` is one MakeUpfirdnShape made, `taps` has shape.taps entries. The taps go where
// UpfirdnPlacementForShape says. T is float, double, Float16 or BFloat16, the taps of its compute
// type (float for the 16-bit types, computed in float and rounded once: bitwise the CPU kernel's).
template <class T>
Status LaunchUpfirdn(GpuStream stream, const T* x, T* y, const UpfirdnShape& shape,
                     const TableView<ComputeTypeOf<T>>& taps, LaunchReport* report = nullptr);

// The same with the placement chosen by the caller (benchmarks, tests of every placement) and the
// lanes arranged as kAuto says.
template <class T>
Status LaunchUpfirdnWithPlacement(GpuStream stream, const T* x, T* y, const UpfirdnShape& shape,
                                  const TableView<ComputeTypeOf<T>>& taps, Placement placement,
                                  LaunchReport* report = nullptr);

// The same with the lanes' arrangement chosen too: kPhasePerLane needs a table in shared or
// global memory (InvalidArgument otherwise); kPhasePerWarp and kPhasePerLane a shape whose tile
// fits this GPU (FailedPrecondition otherwise).
template <class T>
Status LaunchUpfirdnWithArrangement(GpuStream stream, const T* x, T* y, const UpfirdnShape& shape,
                                    const TableView<ComputeTypeOf<T>>& taps, Placement placement,
                                    UpfirdnArrangement arrangement, LaunchReport* report = nullptr);

// Where a table of `count` taps of T (float or double) from `source` goes when every lane of a
// warp reads the same tap (kPhasePerWarp): by value (a host table of up to 4 KiB), a constant bank
// (up to 4,096 taps), or global memory. What a framework adapter asks to prepare the table;
// LaunchUpfirdn may stage it in shared memory or read it from global memory instead
// (UpfirdnPlacementForShape), which takes a table from any source.
template <class T>
Placement UpfirdnPlacement(std::int64_t count, SourceKind source,
                           std::int64_t launch_elements = kUnknownLaunchElements);

// Where LaunchUpfirdn puts the taps for `shape`: by value where UpfirdnPlacement says so and
// kPhasePerWarp's tiles fit, else shared memory where the taps fit it (64 KiB, beside the tile),
// else global memory; the direct kernel as UpfirdnPlacement says where its lanes share one phase.
// A launch of at most kSmallLaunchElements outputs takes a small host table by value and reads a
// device table in place (ChoosePlacement).
// kPhasePerLane stages a table in global memory of up to 96 KiB in shared memory too (by phase,
// where its rows take at most twice the taps: TapRows), and reads a table placed in shared memory
// from global memory where its rows leave no room for a tile: the report names the placement, not
// where the kernel reads it.
template <class T>
Placement UpfirdnPlacementForShape(const UpfirdnShape& shape, SourceKind source);

// The arrangement a launch with `placement` runs for `shape` when asked for kAuto, on a GPU that
// offers a block 96 KiB of shared memory beside the taps that placement stages (a GPU with less
// runs kDirect for more shapes).
template <class T>
UpfirdnArrangement UpfirdnChosenArrangement(const UpfirdnShape& shape, Placement placement);

}  // namespace ops
}  // namespace constmem

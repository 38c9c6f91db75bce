// SPDX-License-Identifier: Apache-2.0
// Interpolate for PyTorch: constmem::interpolate (knots as a tensor) and
// constmem::interpolate_static (knots as a list in the schema). Schemas, fake kernels and
// autograd are in python/constmem/torch/.
#include <cstdint>
#include <vector>

#include "binding.h"
#include "interpolate/interpolate_cpu.h"
#include "interpolate/interpolate_functor.h"
#if CONSTMEM_WITH_GPU
#include "interpolate/interpolate_launcher.h"
#endif

namespace constmem {
namespace torch_binding {
namespace {

using ops::kInterpolateMaxKnots;

template <class T>
Tensor InterpolateWith(const Tensor& x_in, const TableView<T>& knots, double lo, double hi) {
  ops::InterpolateGrid<T> grid{};
  const Status checked = ops::MakeInterpolateGrid<T>(lo, hi, knots.size, &grid);
  if (!checked.ok()) Fail(checked.message());
  const Tensor x = Contiguous(x_in);
  Tensor y = torch::stable::empty_like(x);
  const T* in = x.const_data_ptr<T>();
  T* out = y.mutable_data_ptr<T>();
  if (x.is_cpu()) {
    ShardOnCpuThreads(x.numel(), 8, [&](std::int64_t begin, std::int64_t end) {
      ops::InterpolateCpuRange(in, out, begin, end, knots.values, grid);
    });
    return y;
  }
#if CONSTMEM_WITH_GPU
  ThrowIfError(ops::LaunchInterpolate<T>(CurrentStream(x), in, out, x.numel(), knots, lo, hi));
#else
  Fail("constmem was built without GPU kernels");
#endif
  return y;
}

Tensor Interpolate(Tensor x, Tensor knots, double lo, double hi) {
  return ForFloatData(x, "x", [&](auto zero) {
    using T = decltype(zero);
    const Tensor checked = CheckedTable<T>(knots, x, "knots", kInterpolateMaxKnots);
    return InterpolateWith<T>(x, ViewOf<T>(checked), lo, hi);
  });
}

Tensor InterpolateStatic(Tensor x, std::vector<double> knots, double lo, double hi) {
  return ForFloatData(x, "x", [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T> values = StaticTable<T>(knots, "knots", kInterpolateMaxKnots);
    return InterpolateWith<T>(x, StaticView(values), lo, hi);
  });
}

}  // namespace
}  // namespace torch_binding
}  // namespace constmem

STABLE_TORCH_LIBRARY_IMPL(constmem, CompositeExplicitAutograd, m) {
  m.impl("interpolate", TORCH_BOX(&constmem::torch_binding::Interpolate));
  m.impl("interpolate_static", TORCH_BOX(&constmem::torch_binding::InterpolateStatic));
}

// SPDX-License-Identifier: Apache-2.0
// FirFilter for PyTorch: constmem::fir_filter (taps as a tensor) and constmem::fir_filter_static
// (taps as a list in the schema). Schemas, fake kernels and autograd are in
// python/constmem/torch/.
#include <cstdint>
#include <string>
#include <vector>

#include "binding.h"
#include "fir_filter/fir_filter_cpu.h"
#include "fir_filter/fir_filter_functor.h"
#if CONSTMEM_WITH_GPU
#include "fir_filter/fir_filter_launcher.h"
#endif

namespace constmem {
namespace torch_binding {
namespace {

using ops::FirPadding;
using ops::FirShape;
using ops::kFirMaxTaps;

FirPadding ParsePadding(const std::string& padding) {
  if (padding == "SAME") return FirPadding::kSame;
  if (padding == "VALID") return FirPadding::kValid;
  Fail("padding must be 'SAME' or 'VALID'; got '" + padding + "'");
}

template <class T>
Tensor FirFilterWith(const Tensor& x_in, const TableView<T>& taps, const std::string& padding) {
  const FirPadding mode = ParsePadding(padding);
  if (x_in.dim() < 1) Fail("x must have rank 1 or more (the filter runs along the last axis)");
  const Tensor x = Contiguous(x_in);
  // Every leading dimension is a batch of rows; y keeps them and replaces the last.
  std::vector<std::int64_t> y_sizes;
  std::int64_t rows = 1;
  for (std::int64_t d = 0; d + 1 < x.dim(); ++d) {
    y_sizes.push_back(x.size(d));
    rows *= x.size(d);
  }
  const FirShape shape = ops::MakeFirShape(rows, x.size(x.dim() - 1), taps.size, mode);
  y_sizes.push_back(shape.outputs);
  Tensor y = torch::stable::new_empty(x, y_sizes);
  if (y.numel() == 0) return y;
  const T* in = x.const_data_ptr<T>();
  T* out = y.mutable_data_ptr<T>();
  if (x.is_cpu()) {
    ShardOnCpuThreads(y.numel(), taps.size + 2, [&](std::int64_t begin, std::int64_t end) {
      ops::FirFilterCpuRange(in, out, shape, taps.values, begin, end);
    });
    return y;
  }
#if CONSTMEM_WITH_GPU
  ThrowIfError(ops::LaunchFirFilter<T>(CurrentStream(x), in, out, shape, taps));
#else
  Fail("constmem was built without GPU kernels");
#endif
  return y;
}

Tensor FirFilter(Tensor x, Tensor taps, std::string padding) {
  return ForFloatData(x, "x", [&](auto zero) {
    using T = decltype(zero);
    const Tensor checked = CheckedTable<T>(taps, x, "taps", kFirMaxTaps);
    return FirFilterWith<T>(x, ViewOf<T>(checked), padding);
  });
}

Tensor FirFilterStatic(Tensor x, std::vector<double> taps, std::string padding) {
  return ForFloatData(x, "x", [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T> values = StaticTable<T>(taps, "taps", kFirMaxTaps);
    return FirFilterWith<T>(x, StaticView(values), padding);
  });
}

}  // namespace
}  // namespace torch_binding
}  // namespace constmem

STABLE_TORCH_LIBRARY_IMPL(constmem, CompositeExplicitAutograd, m) {
  m.impl("fir_filter", TORCH_BOX(&constmem::torch_binding::FirFilter));
  m.impl("fir_filter_static", TORCH_BOX(&constmem::torch_binding::FirFilterStatic));
}

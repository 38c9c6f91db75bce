// SPDX-License-Identifier: Apache-2.0
// Polyval for PyTorch: constmem::polyval (coefficients as a tensor) and constmem::polyval_static
// (coefficients as a list in the schema). Schemas, fake kernels and autograd are in
// python/constmem/torch/.
#include <cstdint>
#include <vector>

#include "binding.h"
#include "polyval/polyval_cpu.h"
#include "polyval/polyval_functor.h"
#if CONSTMEM_WITH_GPU
#include "polyval/polyval_launcher.h"
#endif

namespace constmem {
namespace torch_binding {
namespace {

using ops::kPolyvalMaxCoefficients;

template <class T>
Tensor PolyvalWith(const TableView<T>& coeffs, const Tensor& x_in) {
  const Tensor x = Contiguous(x_in);
  Tensor y = torch::stable::empty_like(x);
  const T* in = x.const_data_ptr<T>();
  T* out = y.mutable_data_ptr<T>();
  if (x.is_cpu()) {
    ShardOnCpuThreads(x.numel(), coeffs.size + 2, [&](std::int64_t begin, std::int64_t end) {
      ops::PolyvalCpuRange(in, out, begin, end, coeffs.values, coeffs.size);
    });
    return y;
  }
#if CONSTMEM_WITH_GPU
  ThrowIfError(ops::LaunchPolyval<T>(CurrentStream(x), in, out, x.numel(), coeffs));
#else
  Fail("constmem was built without GPU kernels");
#endif
  return y;
}

Tensor Polyval(Tensor coeffs, Tensor x) {
  return ForFloatData(x, "x", [&](auto zero) {
    using T = decltype(zero);
    const Tensor checked = CheckedTable<T>(coeffs, x, "coeffs", kPolyvalMaxCoefficients);
    return PolyvalWith<T>(ViewOf<T>(checked), x);
  });
}

Tensor PolyvalStatic(std::vector<double> coeffs, Tensor x) {
  return ForFloatData(x, "x", [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T> values = StaticTable<T>(coeffs, "coeffs", kPolyvalMaxCoefficients);
    return PolyvalWith<T>(StaticView(values), x);
  });
}

}  // namespace
}  // namespace torch_binding
}  // namespace constmem

STABLE_TORCH_LIBRARY_IMPL(constmem, CompositeExplicitAutograd, m) {
  m.impl("polyval", TORCH_BOX(&constmem::torch_binding::Polyval));
  m.impl("polyval_static", TORCH_BOX(&constmem::torch_binding::PolyvalStatic));
}

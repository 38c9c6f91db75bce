// SPDX-License-Identifier: Apache-2.0
// Frobulate for PyTorch: constmem::frobulate (the table as a tensor) and constmem::frobulate_static
// (the table as a list in the schema, fixed per call site). Schemas, fake kernels and autograd are
// in python/constmem/torch/.
#include <cstdint>
#include <vector>

#include "binding.h"
#include "frobulate/frobulate_cpu.h"
#include "frobulate/frobulate_functor.h"
#if CONSTMEM_WITH_GPU
#include "frobulate/frobulate_launcher.h"
#endif

namespace constmem {
namespace torch_binding {
namespace {

using ops::kFrobulateMaxTableSize;

Tensor FrobulateWith(const Tensor& data_in, const TableView<std::int32_t>& table) {
  const Tensor data = Contiguous(data_in);
  Tensor out = torch::stable::empty_like(data);
  ForFloatData(data, "data", [&](auto zero) {
    using T = decltype(zero);
    const T* x = data.const_data_ptr<T>();
    T* y = out.mutable_data_ptr<T>();
    if (data.is_cpu()) {
      const std::vector<T> entries(table.values, table.values + table.size);
      ShardOnCpuThreads(data.numel(), table.size + 2, [&](std::int64_t begin, std::int64_t end) {
        ops::FrobulateCpuRange(x, y, begin, end, entries.data(), table.size);
      });
      return;
    }
#if CONSTMEM_WITH_GPU
    ThrowIfError(ops::LaunchFrobulate<T>(CurrentStream(data), x, y, data.numel(), table));
#else
    Fail("constmem was built without GPU kernels");
#endif
  });
  return out;
}

Tensor Frobulate(Tensor data, Tensor table) {
  const Tensor checked = CheckedTable<std::int32_t>(table, data, "table", kFrobulateMaxTableSize);
  return FrobulateWith(data, ViewOf<std::int32_t>(checked));
}

Tensor FrobulateStatic(Tensor data, std::vector<std::int64_t> table) {
  const std::vector<std::int32_t> values =
      StaticTable<std::int32_t>(table, "table", kFrobulateMaxTableSize);
  return FrobulateWith(data, StaticView(values));
}

}  // namespace
}  // namespace torch_binding
}  // namespace constmem

STABLE_TORCH_LIBRARY_IMPL(constmem, CompositeExplicitAutograd, m) {
  m.impl("frobulate", TORCH_BOX(&constmem::torch_binding::Frobulate));
  m.impl("frobulate_static", TORCH_BOX(&constmem::torch_binding::FrobulateStatic));
}

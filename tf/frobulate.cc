// SPDX-License-Identifier: Apache-2.0
// Frobulate for TensorFlow: Constmem>Frobulate, ...HostTable and ...Attr (adapter/table_op.h).
#include <cstdint>

#include "adapter/table_op.h"
#include "frobulate/frobulate_cpu.h"
#include "frobulate/frobulate_functor.h"
#include "frobulate/frobulate_launcher.h"
#if CONSTMEM_WITH_XLA
#include "handlers.h"  // the FFI handlers
#endif

namespace constmem {
namespace ops {

struct FrobulateTf : tf_adapter::TableOp {
  static constexpr tf_adapter::TableOpNames kNames{"Constmem>Frobulate", "data", "table", "output"};
  static constexpr tf_adapter::TableOpLimits kLimits{1, kFrobulateMaxTableSize,
                                                     kFrobulateMaxElements};
  static constexpr bool kInt32Table = true;
  static constexpr bool kCpuTableInDataType = true;  // the kernel adds entries converted to T
  static constexpr const char* kDoc = R"doc(
output[i] = (((data[i] + table[0]) + table[1]) + ... + table[n-1]), left to right in T.
On the GPU the table is read from __constant__ memory with warp-uniform indices.
data: any shape, float32 or float64.
table: int32 vector of 1 to 16384 entries.
)doc";

  template <class T, class Shard>
  static void RunCpu(const Params&, const Shape& shape, const T* data, T* out, const T* table,
                     std::int64_t size, const Shard& shard) {
    shard(shape.elements, size + 2, [&](std::int64_t begin, std::int64_t end) {
      FrobulateCpuRange(data, out, begin, end, table, size);
    });
  }
  template <class T>
  static Status Launch(GpuStream stream, const Params&, const Shape& shape, const T* data, T* out,
                       const TableView<std::int32_t>& table) {
    return LaunchFrobulate<T>(stream, data, out, shape.elements, table);
  }
  template <class T>
  static Placement Place(std::int64_t size, SourceKind source) {
    return FrobulatePlacement(size, source);
  }
};

}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_TABLE_OP(constmem::ops::FrobulateTf);
CONSTMEM_REGISTER_TABLE_OP_XLA(constmem::ops::FrobulateTf, "constmem_frobulate",
                               constmem_frobulate_host,
                               CONSTMEM_XLA_CUDA_HANDLER(constmem_frobulate_cuda));

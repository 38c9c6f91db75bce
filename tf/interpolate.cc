// SPDX-License-Identifier: Apache-2.0
// Interpolate for TensorFlow: Constmem>Interpolate, ...HostTable and ...Attr
// (adapter/table_op.h). Each takes `bounds`, [lo, hi] as the IEEE-754 bit patterns of x's dtype
// (the encoding of table attrs: exact for float64, which a `float` attr is not).
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "adapter/table_op.h"
#include "interpolate/interpolate_cpu.h"
#include "interpolate/interpolate_functor.h"
#include "interpolate/interpolate_launcher.h"
#if CONSTMEM_WITH_XLA
#include "handlers.h"  // the FFI handlers
#endif

namespace constmem {
namespace ops {

struct InterpolateTf : tf_adapter::TableOp {
  static constexpr tf_adapter::TableOpNames kNames{"Constmem>Interpolate", "x", "knots"};
  static constexpr tf_adapter::TableOpLimits kLimits{kInterpolateMinKnots, kInterpolateMaxKnots,
                                                     kInterpolateMaxElements};
  static constexpr const char* kDoc = R"doc(
Piecewise-linear interpolation into `knots`, n values at n equally spaced points over [lo, hi],
clamped at the ends: np.interp(x, np.linspace(lo, hi, n), knots), with
t = (x - lo) * ((n - 1) / (hi - lo)), i = floor(t), y = fma(t - i, knots[i+1] - knots[i], knots[i]).
x: any shape, float32 or float64.
knots: vector of 2 to 16384 values of x's dtype.
bounds: [lo, hi] as IEEE-754 bit patterns of x's dtype (float32 in the low 32 bits); lo < hi.
)doc";
  static std::vector<std::string> Attrs() { return {"bounds: list(int)"}; }

  // [lo, hi], checked in the data's type (with the fewest knots until their number is known).
  struct Params {
    double lo = 0;
    double hi = 1;
    bool float32 = true;
    template <class Attrs>
    absl::Status Read(const Attrs& attrs, tensorflow::DataType dtype) {
      float32 = dtype == tensorflow::DT_FLOAT;
      TF_RETURN_IF_ERROR(float32 ? ReadBounds<float>(attrs) : ReadBounds<double>(attrs));
      return CheckTable(*this, kInterpolateMinKnots);
    }
    template <class T, class Attrs>
    absl::Status ReadBounds(const Attrs& attrs) {
      std::vector<T> bounds;
      TF_RETURN_IF_ERROR(tf_adapter::ReadAttrTable(&attrs, "bounds", 2, &bounds, 2));
      lo = bounds[0];
      hi = bounds[1];
      return absl::OkStatus();
    }
  };
  static absl::Status CheckTable(const Params& params, std::int64_t knots) {
    InterpolateGrid<float> narrow{};
    InterpolateGrid<double> wide{};
    return tf_adapter::ToTfStatus(
        params.float32 ? MakeInterpolateGrid<float>(params.lo, params.hi, knots, &narrow)
                       : MakeInterpolateGrid<double>(params.lo, params.hi, knots, &wide));
  }
  static std::string XlaAttributes(const Params& params) {
    return "{" + F64Attribute("hi", params.hi) + ", " + F64Attribute("lo", params.lo) + "}";
  }
  // An f64 attribute by its bit pattern, which keeps it exact.
  static std::string F64Attribute(const char* name, double value) {
    std::uint64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    char text[64];
    std::snprintf(text, sizeof(text), "%s = 0x%016" PRIX64 " : f64", name, bits);
    return text;
  }

  template <class T, class Shard>
  static void RunCpu(const Params& params, const Shape& shape, const T* x, T* y, const T* knots,
                     std::int64_t count, const Shard& shard) {
    InterpolateGrid<T> grid{};
    MakeInterpolateGrid<T>(params.lo, params.hi, count, &grid);  // checked by CheckTable
    shard(shape.elements, 8, [&](std::int64_t begin, std::int64_t end) {
      InterpolateCpuRange(x, y, begin, end, knots, grid);
    });
  }
  template <class T>
  static Status Launch(GpuStream stream, const Params& params, const Shape& shape, const T* x, T* y,
                       const TableView<T>& knots) {
    return LaunchInterpolate<T>(stream, x, y, shape.elements, knots, params.lo, params.hi);
  }
  template <class T>
  static Placement Place(std::int64_t count, SourceKind source) {
    return InterpolatePlacement<T>(count, source);
  }
};

}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_TABLE_OP(constmem::ops::InterpolateTf);
CONSTMEM_REGISTER_TABLE_OP_XLA(constmem::ops::InterpolateTf, "constmem_interpolate",
                               constmem_interpolate_host,
                               CONSTMEM_XLA_CUDA_HANDLER(constmem_interpolate_cuda));

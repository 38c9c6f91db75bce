// SPDX-License-Identifier: Apache-2.0
// Interpolate under XLA: a custom call into its XLA FFI handlers (xla_ffi/, shared with JAX), with
// [lo, hi] as f64 attributes given by their bit patterns (exact).
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "adapter/xla/xla_lowering.h"
#include "handlers.h"
#include "interpolate/interpolate_functor.h"
#include "tensorflow/core/framework/node_def_util.h"

namespace constmem {
namespace ops {
namespace {

// A `bounds` entry (bits of float32 or float64) as the double it holds.
double BoundValue(std::int64_t bits, bool float32) {
  if (float32) {
    const auto pattern = static_cast<std::uint32_t>(bits);
    float value;
    std::memcpy(&value, &pattern, sizeof(value));
    return value;
  }
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

std::string F64Attribute(const char* name, double value) {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  char text[64];
  std::snprintf(text, sizeof(text), "%s = 0x%016" PRIX64 " : f64", name, bits);
  return text;
}

tf_adapter::XlaLowering InterpolateLowering() {
  tf_adapter::XlaLowering lowering = tf_adapter::MakeXlaLowering(
      "Constmem>Interpolate", "constmem_interpolate", "knots", kInterpolateMaxKnots,
      constmem_interpolate_host, CONSTMEM_XLA_CUDA_HANDLER(constmem_interpolate_cuda));
  lowering.describe = [](const tensorflow::NodeDef& node, tensorflow::DataType dtype,
                         std::int64_t knots, std::vector<std::int64_t>*, std::string* attributes) {
    std::vector<std::int64_t> bounds;
    TF_RETURN_IF_ERROR(tensorflow::GetNodeAttr(node, "bounds", &bounds));
    if (bounds.size() != 2) return absl::InvalidArgumentError("bounds must be [lo, hi]");
    const bool float32 = dtype == tensorflow::DT_FLOAT;
    const double lo = BoundValue(bounds[0], float32);
    const double hi = BoundValue(bounds[1], float32);
    InterpolateGrid<double> grid{};
    TF_RETURN_IF_ERROR(tf_adapter::ToTfStatus(MakeInterpolateGrid<double>(lo, hi, knots, &grid)));
    *attributes = "{" + F64Attribute("hi", hi) + ", " + F64Attribute("lo", lo) + "}";
    return absl::OkStatus();
  };
  return lowering;
}

}  // namespace
}  // namespace ops
}  // namespace constmem

CONSTMEM_REGISTER_XLA_LOWERING(interpolate, constmem::ops::InterpolateLowering());

// SPDX-License-Identifier: Apache-2.0
// Polyval's, FirFilter's and Interpolate's GPU launchers, driven without a framework on a CUDA
// stream, against their scalar definitions (std::fma on the host: the GPU's fma rounds the same
// way): bit for bit, every table source and placement, aligned and misaligned data, partial
// tiles, and for Interpolate's global bank concurrent streams and a captured graph, and its
// tables past what a block stages (a staged prefix). float16 and bfloat16 data (Polyval,
// Interpolate, FirFilter) against the CPU kernels, bit for bit (a NaN as any NaN: the GPU's float
// arithmetic makes canonical ones).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <type_traits>
#include <vector>

#include "constmem/constmem.cuh"
#include "constmem/numeric.hpp"
#include "fir_filter/fir_filter_cpu.h"
#include "fir_filter/fir_filter_functor.h"
#include "fir_filter/fir_filter_launcher.h"
#include "interpolate/interpolate_cpu.h"
#include "interpolate/interpolate_launcher.h"
#include "narrow_test_support.h"
#include "polyval/polyval_cpu.h"
#include "polyval/polyval_functor.h"
#include "polyval/polyval_launcher.h"
#include "test_support.cuh"

namespace constmem {
namespace ops {
namespace {

using testing::DeviceBuffer;
using testing::Stream;
using testing::Tables;
using testing::UnderSanitizer;

// Under compute-sanitizer every access is checked: smaller cases, the same shapes of code path.

template <class T>
std::vector<T> Random(std::mt19937_64& rng, std::int64_t n, double scale) {
  std::uniform_real_distribution<double> uniform(-scale, scale);
  std::vector<T> values(n);
  for (auto& v : values) v = static_cast<T>(uniform(rng));
  return values;
}

template <class T>
std::vector<T> Copy(const DeviceBuffer<T>& buffer, std::size_t offset, std::size_t n) {
  const std::vector<T> all = buffer.Read();
  return std::vector<T>(all.begin() + offset, all.begin() + offset + n);
}

template <class T>
void CheckPolyval(std::int64_t count, std::int64_t coeff_count, int misalign, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto x = Random<T>(rng, count, 1.5);
  const Tables<T> coeffs(Random<T>(rng, coeff_count, 1.0));
  std::vector<T> expected(count);
  for (std::int64_t i = 0; i < count; ++i)
    expected[i] = PolyvalElement(x[i], coeffs.host.data(), coeff_count);
  Stream stream;
  DeviceBuffer<T> in(count + 1), out(count + 1);
  ASSERT_CUDA(
      cudaMemcpyAsync(in.get() + misalign, x.data(), count * sizeof(T), cudaMemcpyDefault, stream));
  for (SourceKind source :
       {SourceKind::kPageableHost, SourceKind::kPinnedHost, SourceKind::kDevice}) {
    for (Placement placement :
         {Placement::kByValue, Placement::kConstantBank, Placement::kGlobalMemory}) {
      const bool host = source != SourceKind::kDevice;
      if (placement == Placement::kByValue && !host) continue;  // by value needs a host table
      if (placement == Placement::kByValue && coeff_count * sizeof(T) > kDefaultByValueBytes)
        continue;
      // The constant bank holds 4,096 coefficients; a host table beyond goes to global memory
      // through a stream-ordered buffer.
      if (placement == Placement::kConstantBank && coeff_count > 4096) continue;
      ASSERT_CUDA(cudaMemsetAsync(out.get(), 0xFF, (count + 1) * sizeof(T), stream));
      ASSERT_OK(LaunchPolyvalWithPlacement<T>(stream, in.get() + misalign, out.get() + misalign,
                                              count, coeffs.View(source), placement));
      ASSERT_CUDA(cudaStreamSynchronize(stream));
      const auto y = Copy(out, misalign, count);
      ASSERT_EQ(std::memcmp(y.data(), expected.data(), count * sizeof(T)), 0)
          << count << " elements, " << coeff_count << " coefficients, " << PlacementName(placement)
          << ", misaligned by " << misalign;
    }
  }
}

TEST(PolyvalGpu, EveryPlacementBitwiseEqualToTheDefinition) {
  REQUIRE_GPU();
  std::uint64_t seed = 1;
  for (std::int64_t count : {1, 31, 4096, 8192 * 4 + 77, 1 << 20}) {
    for (std::int64_t coeffs : {1, 2, 17, 257, 1024, 4096, 4097, 70000}) {
      // The host reference's budget, smaller under the sanitizer.
      if (count * coeffs > (std::int64_t{1} << (UnderSanitizer() ? 16 : 25))) continue;
      for (int misalign : {0, 1}) {
        CheckPolyval<float>(count, coeffs, misalign, seed++);
        CheckPolyval<double>(count, std::min<std::int64_t>(coeffs, 512), misalign, seed++);
      }
    }
  }
}

TEST(PolyvalGpu, RejectsBadCoefficientCounts) {
  REQUIRE_GPU();
  Stream stream;
  DeviceBuffer<float> x(16);
  std::vector<float> coeffs(kPolyvalMaxCoefficients + 1, 1.0f);
  TableView<float> too_many{coeffs.data(), kPolyvalMaxCoefficients + 1, SourceKind::kPageableHost};
  EXPECT_EQ(LaunchPolyval<float>(stream, x.get(), x.get(), 16, too_many).code(),
            StatusCode::kInvalidArgument);
  TableView<float> none{coeffs.data(), 0, SourceKind::kPageableHost};
  EXPECT_EQ(LaunchPolyval<float>(stream, x.get(), x.get(), 16, none).code(),
            StatusCode::kInvalidArgument);
}

// `offset` elements before x and y: rows that do not start on a 16-byte boundary. The kernels
// run as on a GPU that offers `shared_bytes_per_block` (this GPU's own by default). float16 and
// bfloat16 data (float taps): one sample in 32 a special value (NaN, infinities, subnormal
// halves), against the CPU kernel, NaN as NaN.
template <class T>
void CheckFir(std::int64_t rows, std::int64_t length, std::int64_t taps, FirPadding padding,
              std::uint64_t seed, int offset = 0,
              std::size_t shared_bytes_per_block = std::numeric_limits<std::size_t>::max()) {
  using C = ComputeTypeOf<T>;
  constexpr bool kNarrow = !std::is_same<T, C>::value;
  std::mt19937_64 rng(seed);
  const FirShape shape = MakeFirShape(rows, length, taps, padding);
  std::vector<T> x;
  if constexpr (kNarrow) {
    const auto specials = NarrowSpecialValues<T>();
    x = ToNarrow<T>(Random<float>(rng, rows * length, 1.0));
    for (auto& v : x) {
      if (rng() % 32 == 0) v = specials[rng() % specials.size()];
    }
  } else {
    x = Random<T>(rng, rows * length, 1.0);
  }
  const Tables<C> tap_values(Random<C>(rng, taps, 1.0));
  const std::int64_t total = rows * shape.outputs;
  std::vector<T> expected(total);
  if constexpr (kNarrow) {
    FirFilterCpuRange(x.data(), expected.data(), shape, tap_values.host.data(), 0, total);
  } else {
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t i = 0; i < shape.outputs; ++i) {
        expected[r * shape.outputs + i] =
            FirOutput(x.data() + r * length, shape, tap_values.host.data(), i);
      }
    }
  }
  auto is_nan = [](T v) {
    if constexpr (kNarrow) {
      return IsNarrowNan(v);
    } else {
      return std::isnan(v);
    }
  };
  Stream stream;
  DeviceBuffer<T> in(rows * length + 1 + offset), out(total + 1 + offset);
  ASSERT_CUDA(cudaMemcpyAsync(in.get() + offset, x.data(), x.size() * sizeof(T), cudaMemcpyDefault,
                              stream));
  for (SourceKind source :
       {SourceKind::kPageableHost, SourceKind::kPinnedHost, SourceKind::kDevice}) {
    ASSERT_CUDA(cudaMemsetAsync(out.get(), 0xFF, (total + 1 + offset) * sizeof(T), stream));
    LaunchReport report;
    ASSERT_OK(LaunchFirFilterWithSharedMemory<T>(
        stream, in.get() + offset, out.get() + offset, shape, tap_values.View(source),
        FirFilterPlacement<C>(taps, source), shared_bytes_per_block, &report));
    ASSERT_CUDA(cudaStreamSynchronize(stream));
    const auto y = Copy(out, offset, total);
    bool same = std::memcmp(y.data(), expected.data(), total * sizeof(T)) == 0;
    if constexpr (kNarrow) same = FirstNarrowDifference(y, expected) == -1;
    ASSERT_TRUE(same) << sizeof(T) << "-byte data, " << rows << " x " << length << ", " << taps
                      << " taps, " << (padding == FirPadding::kSame ? "SAME" : "VALID")
                      << ", offset " << offset << ", " << PlacementName(report.placement) << ", "
                      << shared_bytes_per_block << " bytes of shared memory a block";
    const auto poisoned = out.Read();
    // The 0xFF poison is a NaN.
    EXPECT_TRUE(is_nan(poisoned[total + offset])) << "wrote past the output";
    if (offset > 0) EXPECT_TRUE(is_nan(poisoned[0])) << "wrote before the output";
  }
}

TEST(FirFilterGpu, EveryShapeAndSourceBitwiseEqualToTheDefinition) {
  REQUIRE_GPU();
  std::uint64_t seed = 100;
  // SAME pads (k - 1) / 2 zeros in front: 1, 2, 3 and 5 taps between them start a tile's
  // samples at each offset within a vector.
  for (std::int64_t taps : {1, 2, 3, 5, 8, 16, 17, 63, 64, 513, 2048}) {
    if (UnderSanitizer() && taps > 64) continue;
    for (auto padding : {FirPadding::kSame, FirPadding::kValid}) {
      CheckFir<float>(3, 5000, taps, padding, seed++);  // partial tiles, rows of whole vectors
      CheckFir<float>(2, 4096 * 2, taps, padding, seed++);
      CheckFir<float>(3, 4099, taps, padding, seed++);     // rows that start anywhere
      CheckFir<float>(2, 4100, taps, padding, seed++, 1);  // whole vectors, misaligned
      CheckFir<float>(4, 7, taps, padding, seed++);        // taps longer than the signal
      CheckFir<double>(3, 2049, taps, padding, seed++);
      CheckFir<double>(3, 2050, taps, padding, seed++);
    }
  }
}

// Past the tiled kernels' 2,048 taps: the chunked kernel, its taps in global memory from every
// source (a host table through the core's stream-ordered buffer), at the boundary and far beyond,
// with filters longer than the rows.
TEST(FirFilterGpu, LongFiltersInChunksBitwiseEqualToTheDefinition) {
  REQUIRE_GPU();
  std::uint64_t seed = 800;
  for (std::int64_t taps : {2048, 2049, 2052, 4096, 4097, 6150, 20000}) {
    if (UnderSanitizer() && taps > 2052) continue;
    for (auto padding : {FirPadding::kSame, FirPadding::kValid}) {
      CheckFir<float>(3, 5000, taps, padding, seed++);  // partial tiles, whole vectors
      CheckFir<float>(2, 700, taps, padding, seed++);   // taps longer than the signal
      CheckFir<double>(3, 2049, taps, padding, seed++);
      if (taps > 4097) continue;                           // the host reference's budget
      CheckFir<float>(3, 4099, taps, padding, seed++);     // rows that start anywhere
      CheckFir<float>(2, 4100, taps, padding, seed++, 1);  // whole vectors, misaligned
      CheckFir<double>(2, 9000, taps, padding, seed++);    // several tiles a row
    }
  }
}

// The automatic placement on each side of kSmallLaunchElements (FirFilter's: of
// kFirFilterSmallLaunchElements): a device table bound for the bank is read in place by a launch
// of at most that many outputs, and copied into the bank past it; either way the outputs are the
// definition's.
TEST(OpsGpu, SmallLaunchesReadDeviceTablesInPlace) {
  REQUIRE_GPU();
  std::mt19937_64 rng(4242);
  Stream stream;
  for (std::int64_t outputs : {kSmallLaunchElements, kSmallLaunchElements + 1,
                               kFirFilterSmallLaunchElements, kFirFilterSmallLaunchElements + 1}) {
    const Placement expected_placement =
        outputs <= kSmallLaunchElements ? Placement::kGlobalMemory : Placement::kConstantBank;
    const Placement fir_placement = outputs <= kFirFilterSmallLaunchElements
                                        ? Placement::kGlobalMemory
                                        : Placement::kConstantBank;
    {  // FirFilter, 17 device taps, one row with SAME padding: `outputs` outputs
      const FirShape shape = MakeFirShape(1, outputs, 17, FirPadding::kSame);
      const auto x = Random<float>(rng, outputs, 1.0);
      const Tables<float> taps(Random<float>(rng, 17, 1.0));
      std::vector<float> expected(outputs);
      for (std::int64_t i = 0; i < outputs; ++i) {
        expected[i] = FirOutput(x.data(), shape, taps.host.data(), i);
      }
      DeviceBuffer<float> in(outputs), out(outputs);
      ASSERT_CUDA(
          cudaMemcpyAsync(in.get(), x.data(), outputs * sizeof(float), cudaMemcpyDefault, stream));
      LaunchReport report;
      ASSERT_OK(LaunchFirFilter<float>(stream, in.get(), out.get(), shape,
                                       taps.View(SourceKind::kDevice), &report));
      ASSERT_CUDA(cudaStreamSynchronize(stream));
      EXPECT_EQ(report.placement, fir_placement) << "FirFilter, " << outputs << " outputs";
      EXPECT_EQ(FirFilterPlacement<float>(17, SourceKind::kDevice, outputs), fir_placement);
      EXPECT_EQ(std::memcmp(out.Read().data(), expected.data(), outputs * sizeof(float)), 0)
          << "FirFilter, " << outputs << " outputs";
    }
    if (outputs <= kSmallLaunchElements + 1) {  // Polyval, 1,100 device coefficients
      const std::int64_t coeff_count = 1100;
      const auto x = Random<float>(rng, outputs, 1.5);
      const Tables<float> coeffs(Random<float>(rng, coeff_count, 1.0));
      std::vector<float> expected(outputs);
      for (std::int64_t i = 0; i < outputs; ++i) {
        expected[i] = PolyvalElement(x[i], coeffs.host.data(), coeff_count);
      }
      DeviceBuffer<float> in(outputs), out(outputs);
      ASSERT_CUDA(
          cudaMemcpyAsync(in.get(), x.data(), outputs * sizeof(float), cudaMemcpyDefault, stream));
      LaunchReport report;
      ASSERT_OK(LaunchPolyval<float>(stream, in.get(), out.get(), outputs,
                                     coeffs.View(SourceKind::kDevice), &report));
      ASSERT_CUDA(cudaStreamSynchronize(stream));
      EXPECT_EQ(report.placement, expected_placement) << "Polyval, " << outputs << " outputs";
      EXPECT_EQ(std::memcmp(out.Read().data(), expected.data(), outputs * sizeof(float)), 0)
          << "Polyval, " << outputs << " outputs";
    }
  }
}

TEST(FirFilterLaunch, LongFiltersAreReadFromGlobalMemory) {
  for (SourceKind source :
       {SourceKind::kPageableHost, SourceKind::kPinnedHost, SourceKind::kDevice}) {
    EXPECT_EQ(FirFilterPlacement<float>(2049, source), Placement::kGlobalMemory);
    EXPECT_EQ(FirFilterPlacement<double>(2049, source), Placement::kGlobalMemory);
    EXPECT_EQ(FirFilterPlacement<float>(kFirMaxTaps, source), Placement::kGlobalMemory);
  }
  EXPECT_EQ(FirFilterPlacement<float>(2048, SourceKind::kPageableHost), Placement::kConstantBank);
  EXPECT_EQ(FirFilterPlacement<double>(2048, SourceKind::kDevice), Placement::kConstantBank);
}

// The opt-in shared memory a block of compute capability 7.5, 8.6 and 8.9, and 9.0.
constexpr std::size_t kTuringSharedBytes = 64 * 1024, kAdaSharedBytes = 99 * 1024,
                      kHopperSharedBytes = 227 * 1024;

TEST(FirFilterLaunch, BlocksShrinkWhereSharedMemoryIsSmall) {
  for (std::int64_t taps : {1, 17, 64, 65, 513, 2048, 2049, 20000, int{kFirMaxTaps}}) {
    EXPECT_EQ(FirFilterBlockThreads<float>(taps, kHopperSharedBytes), 256) << taps;
    EXPECT_EQ(FirFilterBlockThreads<double>(taps, kHopperSharedBytes), 256) << taps;
    EXPECT_EQ(FirFilterBlockThreads<float>(taps, kAdaSharedBytes), 256) << taps;
    EXPECT_EQ(FirFilterBlockThreads<double>(taps, kAdaSharedBytes), taps <= 64 ? 256 : 64) << taps;
    EXPECT_EQ(FirFilterBlockThreads<float>(taps, kTuringSharedBytes), 64) << taps;
    EXPECT_EQ(FirFilterBlockThreads<double>(taps, kTuringSharedBytes), 64) << taps;
    EXPECT_EQ(FirFilterBlockThreads<double>(taps, 16 * 1024), 0) << taps;
  }
}

// The kernels of GPUs with less shared memory a block, run here: the same outputs bit for bit, in
// tiles of 64 threads, and with more tiles than teams (each team walks several).
TEST(FirFilterGpu, SmallSharedMemoryBitwiseEqualToTheDefinition) {
  REQUIRE_GPU();
  std::uint64_t seed = 500;
  for (std::size_t shared : {kTuringSharedBytes, kAdaSharedBytes}) {
    for (std::int64_t taps : {1, 3, 17, 63, 64, 65, 513, 2048, 2049, 4097}) {
      if (UnderSanitizer() && taps > 64) continue;
      for (auto padding : {FirPadding::kSame, FirPadding::kValid}) {
        CheckFir<float>(3, 5000, taps, padding, seed++, 0, shared);
        CheckFir<float>(3, 4099, taps, padding, seed++, 0, shared);
        CheckFir<float>(2, 4100, taps, padding, seed++, 1, shared);
        CheckFir<double>(3, 2049, taps, padding, seed++, 0, shared);
        CheckFir<double>(3, 2050, taps, padding, seed++, 0, shared);
      }
    }
  }
  if (UnderSanitizer()) return;
  CheckFir<float>(1200, 16384, 17, FirPadding::kSame, seed++, 0, kTuringSharedBytes);
  CheckFir<double>(600, 4096, 65, FirPadding::kSame, seed++, 0, kTuringSharedBytes);
}

// float16 and bfloat16 through every kernel (warp teams, block teams, chunks), every tap source
// and SAME shift, rows of whole 16-byte vectors and rows that start anywhere, y at odd offsets,
// and the kernels of GPUs with less shared memory a block.
template <class H>
void CheckNarrowFir(std::uint64_t seed) {
  for (std::int64_t taps : {1, 2, 3, 5, 8, 16, 17, 63, 64, 65, 513, 2048, 2049, 4097}) {
    if (UnderSanitizer() && taps > 64) continue;
    for (auto padding : {FirPadding::kSame, FirPadding::kValid}) {
      CheckFir<H>(3, 5000, taps, padding, seed++);  // partial tiles, rows of whole vectors
      CheckFir<H>(2, 4096 * 2, taps, padding, seed++);
      CheckFir<H>(3, 4099, taps, padding, seed++);     // rows that start anywhere
      CheckFir<H>(2, 4104, taps, padding, seed++, 1);  // whole vectors, misaligned
      CheckFir<H>(2, 4104, taps, padding, seed++, 4);  // 8-byte aligned
      CheckFir<H>(4, 7, taps, padding, seed++, 3);     // taps longer than the signal
      for (std::size_t shared : {kTuringSharedBytes, kAdaSharedBytes}) {
        CheckFir<H>(3, 4099, taps, padding, seed++, 0, shared);
        CheckFir<H>(2, 4104, taps, padding, seed++, 1, shared);
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(FirFilterGpu, Float16BitwiseEqualToTheCpu) {
  REQUIRE_GPU();
  CheckNarrowFir<Float16>(2000);
}

TEST(FirFilterGpu, BFloat16BitwiseEqualToTheCpu) {
  REQUIRE_GPU();
  CheckNarrowFir<BFloat16>(3000);
}

TEST(FirFilterGpu, TooLittleSharedMemoryIsAnErrorAndTheNextCallWorks) {
  REQUIRE_GPU();
  Stream stream;
  DeviceBuffer<double> x(4096), y(4096);
  ASSERT_CUDA(cudaMemsetAsync(x.get(), 0, 4096 * sizeof(double), stream));
  std::vector<double> taps(2048, 0.5);
  const TableView<double> view{taps.data(), 2048, SourceKind::kPageableHost};
  const FirShape shape = MakeFirShape(1, 4096, 2048, FirPadding::kSame);
  const Placement placement = FirFilterPlacement<double>(2048, SourceKind::kPageableHost);
  EXPECT_EQ(LaunchFirFilterWithSharedMemory<double>(stream, x.get(), y.get(), shape, view,
                                                    placement, 16 * 1024)
                .code(),
            StatusCode::kFailedPrecondition);
  ASSERT_CUDA(cudaMemsetAsync(y.get(), 0xFF, 4096 * sizeof(double), stream));
  EXPECT_OK(LaunchFirFilter<double>(stream, x.get(), y.get(), shape, view));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  for (double v : y.Read()) ASSERT_EQ(v, 0.0);  // zeros filtered: every output written
}

TEST(FirFilterGpu, EmptyShapesLaunchNothing) {
  REQUIRE_GPU();
  Stream stream;
  DeviceBuffer<float> buffer(4);
  std::vector<float> taps(5, 1.0f);
  const TableView<float> view{taps.data(), 5, SourceKind::kPageableHost};
  for (const FirShape& shape :
       {MakeFirShape(0, 100, 5, FirPadding::kSame), MakeFirShape(3, 0, 5, FirPadding::kSame),
        MakeFirShape(3, 4, 5, FirPadding::kValid)}) {
    EXPECT_OK(LaunchFirFilter<float>(stream, buffer.get(), buffer.get(), shape, view));
  }
  ASSERT_CUDA(cudaStreamSynchronize(stream));
}

// Points over [lo - 10%, hi + 10%] with the special values; `uniform_warps` gives every run of 32
// the same point (warp-uniform reads), else each its own (divergent reads).
template <class T>
std::vector<T> InterpolatePoints(std::mt19937_64& rng, std::int64_t count, double lo, double hi,
                                 bool uniform_warps) {
  const double margin = 0.1 * (hi - lo);
  std::uniform_real_distribution<double> point(lo - margin, hi + margin);
  std::vector<T> x(count);
  for (std::int64_t i = 0; i < count; ++i) {
    x[i] = uniform_warps && i % 32 != 0 ? x[i - 1] : static_cast<T>(point(rng));
  }
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), static_cast<T>(lo),
                        static_cast<T>(hi)};
  for (std::size_t k = 0; k < sizeof(specials) / sizeof(T) && !uniform_warps; ++k) {
    x[(k * 7919) % count] = specials[k];
  }
  return x;
}

template <class T>
bool SameBitsOrBothNan(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return false;
  }
  return true;
}

template <class T>
std::vector<T> InterpolateOnCpu(const std::vector<T>& x, const std::vector<T>& knots, double lo,
                                double hi) {
  InterpolateGrid<T> grid{};
  EXPECT_TRUE(MakeInterpolateGrid<T>(lo, hi, static_cast<std::int64_t>(knots.size()), &grid).ok());
  std::vector<T> y(x.size());
  InterpolateCpuRange(x.data(), y.data(), 0, static_cast<std::int64_t>(x.size()), knots.data(),
                      grid);
  return y;
}

template <class T>
void CheckInterpolate(std::int64_t count, std::int64_t knot_count, int misalign, bool uniform,
                      std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double lo = -1.5, hi = 2.25;
  const auto x = InterpolatePoints<T>(rng, count, lo, hi, uniform);
  const Tables<T> knots(Random<T>(rng, knot_count, 3.0));
  const auto expected = InterpolateOnCpu(x, knots.host, lo, hi);
  Stream stream;
  DeviceBuffer<T> in(count + 1), out(count + 1);
  ASSERT_CUDA(
      cudaMemcpyAsync(in.get() + misalign, x.data(), count * sizeof(T), cudaMemcpyDefault, stream));
  for (SourceKind source :
       {SourceKind::kPageableHost, SourceKind::kPinnedHost, SourceKind::kDevice}) {
    for (Placement placement : {Placement::kByValue, Placement::kConstantBank,
                                Placement::kGlobalMemory, Placement::kSharedMemory}) {
      const bool host = source != SourceKind::kDevice;
      if (placement == Placement::kByValue &&
          (!host || knot_count * sizeof(T) > kDefaultByValueBytes))
        continue;
      if (placement == Placement::kConstantBank && knot_count > 4096) continue;
      ASSERT_CUDA(cudaMemsetAsync(out.get(), 0xFF, (count + 1) * sizeof(T), stream));
      LaunchReport report;
      ASSERT_OK(LaunchInterpolateWithPlacement<T>(stream, in.get() + misalign, out.get() + misalign,
                                                  count, knots.View(source), lo, hi, placement,
                                                  &report));
      ASSERT_EQ(report.placement, placement);
      ASSERT_CUDA(cudaStreamSynchronize(stream));
      ASSERT_TRUE(SameBitsOrBothNan(Copy(out, misalign, count), expected))
          << count << " elements, " << knot_count << " knots, " << PlacementName(placement)
          << ", misaligned by " << misalign << (uniform ? ", uniform" : ", divergent");
    }
  }
}

TEST(InterpolateGpu, EveryPlacementAndSourceBitwiseEqualToTheCpuKernel) {
  REQUIRE_GPU();
  std::uint64_t seed = 11;
  for (std::int64_t count : {1, 33, 4096 + 5, 1 << 20}) {
    for (std::int64_t knots : {2, 16, 1000, 4096, 16384}) {
      if (UnderSanitizer() && count * 4 > (1 << 16)) continue;
      for (int misalign : {0, 1}) {
        CheckInterpolate<float>(count, knots, misalign, misalign == 1, seed++);
        CheckInterpolate<double>(count, knots, misalign, misalign == 0, seed++);
      }
    }
  }
}

TEST(InterpolateGpu, ChoosesSharedOrGlobalMemoryFromEverySource) {
  REQUIRE_GPU();
  for (SourceKind source :
       {SourceKind::kPageableHost, SourceKind::kPinnedHost, SourceKind::kDevice}) {
    // A small host table is staged from its by-value parameter: no copy to the device.
    EXPECT_EQ(InterpolatePlacement<float>(16, source),
              source == SourceKind::kDevice ? Placement::kGlobalMemory : Placement::kSharedMemory);
    EXPECT_EQ(InterpolatePlacement<float>(16, source, kSmallLaunchElements),
              source == SourceKind::kDevice ? Placement::kGlobalMemory : Placement::kByValue);
    EXPECT_EQ(InterpolatePlacement<float>(257, source), Placement::kSharedMemory);
    EXPECT_EQ(InterpolatePlacement<float>(16384, source), Placement::kSharedMemory);
    EXPECT_EQ(InterpolatePlacement<double>(4096, source), Placement::kGlobalMemory);
    EXPECT_EQ(InterpolatePlacement<double>(16384, source), Placement::kGlobalMemory);
  }
}

TEST(InterpolateGpu, BadKnotsAndRangesAreErrorsAndTheNextCallWorks) {
  REQUIRE_GPU();
  Stream stream;
  DeviceBuffer<float> x(64);
  const std::vector<float> one(1, 1.0f), two = {1.0f, 3.0f};
  const TableView<float> too_few{one.data(), 1, SourceKind::kPageableHost};
  EXPECT_EQ(LaunchInterpolate<float>(stream, x.get(), x.get(), 64, too_few, 0.0, 1.0).code(),
            StatusCode::kInvalidArgument);
  const TableView<float> pair{two.data(), 2, SourceKind::kPageableHost};
  EXPECT_EQ(LaunchInterpolate<float>(stream, x.get(), x.get(), 64, pair, 1.0, 0.0).code(),
            StatusCode::kInvalidArgument);
  ASSERT_CUDA(cudaMemsetAsync(x.get(), 0, 64 * sizeof(float), stream));
  EXPECT_OK(LaunchInterpolate<float>(stream, x.get(), x.get(), 64, pair, -1.0, 1.0));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  for (float v : x.Read()) ASSERT_EQ(v, 2.0f);  // the middle of [1, 3]
}

// Host tables in the global bank, from four streams at once, each call its own knots: every
// output is its own table's.
TEST(InterpolateGpu, ConcurrentStreamsReadTheirOwnHostTables) {
  REQUIRE_GPU();
  constexpr int kStreams = 4;
  const int rounds = UnderSanitizer() ? 2 : 25;
  const std::int64_t count = UnderSanitizer() ? 4096 : 1 << 20;
  std::mt19937_64 rng(5);
  const auto x = InterpolatePoints<float>(rng, count, 0.0, 1.0, false);
  DeviceBuffer<float> in(count);
  ASSERT_CUDA(testing::CopyToDevice(in.get(), x.data(), count * sizeof(float)));
  std::vector<Stream> streams(kStreams);
  std::vector<std::unique_ptr<DeviceBuffer<float>>> outs;
  for (int s = 0; s < kStreams; ++s) {
    outs.push_back(std::make_unique<DeviceBuffer<float>>(count * rounds));
  }
  std::vector<std::vector<float>> tables;
  for (int s = 0; s < kStreams; ++s) {
    for (int r = 0; r < rounds; ++r) tables.push_back(Random<float>(rng, 3000, 1.0));
  }
  for (int r = 0; r < rounds; ++r) {
    for (int s = 0; s < kStreams; ++s) {
      const auto& knots = tables[s * rounds + r];
      const TableView<float> view{knots.data(), 3000, SourceKind::kPageableHost};
      ASSERT_OK(LaunchInterpolateWithPlacement<float>(streams[s], in.get(),
                                                      outs[s]->get() + r * count, count, view, 0.0,
                                                      1.0, Placement::kSharedMemory));
    }
  }
  ASSERT_CUDA(cudaDeviceSynchronize());
  for (int s = 0; s < kStreams; ++s) {
    const auto all = outs[s]->Read();
    for (int r = 0; r < rounds; ++r) {
      const auto expected = InterpolateOnCpu(x, tables[s * rounds + r], 0.0, 1.0);
      const std::vector<float> got(all.begin() + r * count, all.begin() + (r + 1) * count);
      ASSERT_TRUE(SameBitsOrBothNan(got, expected)) << "stream " << s << ", round " << r;
    }
  }
}

// A host table staged in shared memory, captured into a graph: replays read the graph's copy.
TEST(InterpolateGpu, CapturedHostTableStaysSharedAndReplaysBitwise) {
  REQUIRE_GPU();
  const std::int64_t count = 1 << 16;
  std::mt19937_64 rng(9);
  const auto x = InterpolatePoints<float>(rng, count, 0.0, 1.0, false);
  auto knots = Random<float>(rng, 8192, 1.0);
  const auto expected = InterpolateOnCpu(x, knots, 0.0, 1.0);
  Stream stream;
  DeviceBuffer<float> in(count), out(count);
  ASSERT_CUDA(testing::CopyToDevice(in.get(), x.data(), count * sizeof(float)));
  cudaGraph_t graph = nullptr;
  LaunchReport report;
  ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const TableView<float> view{knots.data(), 8192, SourceKind::kPageableHost};
  const Status launched =
      LaunchInterpolate<float>(stream, in.get(), out.get(), count, view, 0.0, 1.0, &report);
  ASSERT_CUDA(cudaStreamEndCapture(stream, &graph));
  ASSERT_OK(launched);
  EXPECT_TRUE(report.captured);
  EXPECT_EQ(report.placement, Placement::kSharedMemory);
  std::fill(knots.begin(), knots.end(), 0.0f);  // the graph holds its own copy
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    ASSERT_CUDA(cudaMemsetAsync(out.get(), 0xFF, count * sizeof(float), stream));
    ASSERT_CUDA(cudaGraphLaunch(exec, stream));
    ASSERT_CUDA(cudaStreamSynchronize(stream));
    ASSERT_TRUE(SameBitsOrBothNan(out.Read(), expected)) << "replay " << replay;
  }
  ASSERT_CUDA(cudaGraphExecDestroy(exec));
  ASSERT_CUDA(cudaGraphDestroy(graph));
}

// float32 knots past the 16,384 a block stages stay in global memory (the report says so), and each
// block stages the first 16,384 besides: bitwise equal to the CPU kernel from every source, with
// points on the segments around the prefix's end (one knot staged, the next not), as are the same
// launches with the prefix forced off, and on at every size, and a captured launch's replays.
TEST(InterpolateGpu, KnotsPastWhatABlockStagesReadAStagedPrefixBitwise) {
  REQUIRE_GPU();
  constexpr std::int64_t kStaged = 16384;
  EXPECT_FALSE(InterpolateStagesPrefix<float>(kStaged, SourceKind::kDevice));
  EXPECT_TRUE(InterpolateStagesPrefix<float>(kStaged + 1, SourceKind::kDevice));
  EXPECT_TRUE(InterpolateStagesPrefix<float>(kInterpolateMaxKnots, SourceKind::kPageableHost));
  EXPECT_FALSE(InterpolateStagesPrefix<double>(kStaged + 1, SourceKind::kDevice));
  const std::int64_t count = UnderSanitizer() ? 4096 + 3 : (1 << 20) + 3;
  const double lo = -1.5, hi = 2.25;
  std::uint64_t seed = 41;
  for (std::int64_t knot_count : {kStaged, kStaged + 1, std::int64_t{200000}}) {
    std::mt19937_64 rng(seed++);
    auto x = InterpolatePoints<float>(rng, count, lo, hi, false);
    const double spacing = (hi - lo) / static_cast<double>(knot_count - 1);
    std::size_t k = 100;
    for (std::int64_t knot = kStaged - 3; knot <= std::min(knot_count - 1, kStaged + 2); ++knot) {
      for (double f : {0.0, 0.25, 0.5, 0.999})
        x[k++] = static_cast<float>(lo + (knot + f) * spacing);
    }
    const Tables<float> knots(Random<float>(rng, knot_count, 3.0));
    const auto expected = InterpolateOnCpu(x, knots.host, lo, hi);
    const Placement placement =
        knot_count > kStaged ? Placement::kGlobalMemory : Placement::kSharedMemory;
    Stream stream;
    DeviceBuffer<float> in(count), out(count);
    ASSERT_CUDA(testing::CopyToDevice(in.get(), x.data(), count * sizeof(float)));
    for (SourceKind source :
         {SourceKind::kPageableHost, SourceKind::kPinnedHost, SourceKind::kDevice}) {
      const char* prefixes[] = {"chosen", "forced on", "forced off"};
      for (InterpolatePrefix prefix :
           {InterpolatePrefix::kAuto, InterpolatePrefix::kAlways, InterpolatePrefix::kNever}) {
        ASSERT_CUDA(cudaMemsetAsync(out.get(), 0xFF, count * sizeof(float), stream));
        LaunchReport report;
        if (prefix == InterpolatePrefix::kAuto) {
          ASSERT_OK(LaunchInterpolate<float>(stream, in.get(), out.get(), count, knots.View(source),
                                             lo, hi, &report));
        } else {
          ASSERT_OK(LaunchInterpolateWithPlacement<float>(stream, in.get(), out.get(), count,
                                                          knots.View(source), lo, hi, placement,
                                                          &report, prefix));
        }
        EXPECT_EQ(report.placement, placement) << knot_count << " knots";
        ASSERT_CUDA(cudaStreamSynchronize(stream));
        ASSERT_TRUE(SameBitsOrBothNan(out.Read(), expected))
            << knot_count << " knots, source " << static_cast<int>(source) << ", prefix "
            << prefixes[static_cast<int>(prefix)];
      }
    }
    // Captured: a host table keeps its placement, in the graph's own buffer.
    auto captured_knots = knots.host;
    const TableView<float> view{captured_knots.data(), knot_count, SourceKind::kPageableHost};
    cudaGraph_t graph = nullptr;
    LaunchReport report;
    ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    const Status launched =
        LaunchInterpolate<float>(stream, in.get(), out.get(), count, view, lo, hi, &report);
    ASSERT_CUDA(cudaStreamEndCapture(stream, &graph));
    ASSERT_OK(launched);
    EXPECT_TRUE(report.captured);
    EXPECT_EQ(report.placement, placement);
    std::fill(captured_knots.begin(), captured_knots.end(), 0.0f);
    cudaGraphExec_t exec = nullptr;
    ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    ASSERT_CUDA(cudaMemsetAsync(out.get(), 0xFF, count * sizeof(float), stream));
    ASSERT_CUDA(cudaGraphLaunch(exec, stream));
    ASSERT_CUDA(cudaStreamSynchronize(stream));
    EXPECT_TRUE(SameBitsOrBothNan(out.Read(), expected)) << knot_count << " knots, replayed";
    ASSERT_CUDA(cudaGraphExecDestroy(exec));
    ASSERT_CUDA(cudaGraphDestroy(graph));
  }
}

// float16 and bfloat16 data, computed in float32: the GPU kernels against the CPU kernels (tested
// against the float32 kernels rounded, ops_cpu_test), every source and placement, aligned (eight
// elements a 16-byte access) and misaligned data, partial tiles. Values compare bit for bit, a NaN
// as any NaN.

template <class In>
const char* NarrowName() {
  return std::is_same<In, Float16>::value ? "float16" : "bfloat16";
}

// `count` values over [-scale, scale] rounded to In, with every 16-bit pattern among them (NaNs,
// infinities, subnormals, the largest values) where there is room.
template <class In>
std::vector<In> NarrowData(std::mt19937_64& rng, std::int64_t count, double lo, double hi) {
  std::uniform_real_distribution<double> uniform(lo, hi);
  std::vector<In> x(count);
  for (auto& v : x) v = FromCompute<In>(static_cast<float>(uniform(rng)));
  for (std::int64_t i = 0; i < count && i < 65536; ++i) {
    x[(i * 7919) % count] = In{static_cast<std::uint16_t>(i)};
  }
  return x;
}

template <class In>
bool SameNarrowBitsOrBothNan(const std::vector<In>& a, const std::vector<In>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(ToCompute<float>(a[i])) && std::isnan(ToCompute<float>(b[i]))) continue;
    if (a[i].bits != b[i].bits) return false;
  }
  return true;
}

template <class In>
void CheckNarrowPolyval(std::int64_t count, std::int64_t coeff_count, int misalign,
                        std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto x = NarrowData<In>(rng, count, -1.5, 1.5);
  const Tables<float> coeffs(Random<float>(rng, coeff_count, 1.0));
  std::vector<In> expected(count);
  PolyvalCpuRange(x.data(), expected.data(), 0, count, coeffs.host.data(), coeff_count);
  Stream stream;
  DeviceBuffer<In> in(count + 1), out(count + 1);
  ASSERT_CUDA(cudaMemcpyAsync(in.get() + misalign, x.data(), count * sizeof(In), cudaMemcpyDefault,
                              stream));
  for (SourceKind source :
       {SourceKind::kPageableHost, SourceKind::kPinnedHost, SourceKind::kDevice}) {
    for (Placement placement :
         {Placement::kByValue, Placement::kConstantBank, Placement::kGlobalMemory}) {
      const bool host = source != SourceKind::kDevice;
      if (placement == Placement::kByValue &&
          (!host || coeff_count * sizeof(float) > kDefaultByValueBytes))
        continue;
      if (placement == Placement::kConstantBank && coeff_count > 4096) continue;
      ASSERT_CUDA(cudaMemsetAsync(out.get(), 0xFF, (count + 1) * sizeof(In), stream));
      LaunchReport report;
      ASSERT_OK(LaunchPolyvalWithPlacement<In>(stream, in.get() + misalign, out.get() + misalign,
                                               count, coeffs.View(source), placement, &report));
      ASSERT_EQ(report.placement, placement);
      ASSERT_CUDA(cudaStreamSynchronize(stream));
      const auto all = out.Read();
      ASSERT_TRUE(SameNarrowBitsOrBothNan(
          std::vector<In>(all.begin() + misalign, all.begin() + misalign + count), expected))
          << NarrowName<In>() << ", " << count << " elements, " << coeff_count << " coefficients, "
          << PlacementName(placement) << ", misaligned by " << misalign;
      ASSERT_EQ(all[misalign == 0 ? count : 0].bits, 0xFFFF) << "wrote outside the output";
    }
  }
}

TEST(PolyvalGpu, Float16AndBFloat16EveryPlacementBitwiseEqualToTheCpuKernel) {
  REQUIRE_GPU();
  std::uint64_t seed = 2000;
  // 2,048 elements make a small tile, 8,192 a large one.
  for (std::int64_t count : {1, 7, 8, 2048 + 9, 8192 * 4 + 77, 1 << 20}) {
    for (std::int64_t coeffs : {1, 2, 17, 1024, 4097}) {
      if (count * coeffs > (std::int64_t{1} << (UnderSanitizer() ? 16 : 25))) continue;
      for (int misalign : {0, 1}) {
        CheckNarrowPolyval<Float16>(count, coeffs, misalign, seed++);
        CheckNarrowPolyval<BFloat16>(count, coeffs, misalign, seed++);
      }
    }
  }
}

template <class In>
void CheckNarrowInterpolate(std::int64_t count, std::int64_t knot_count, int misalign,
                            std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double lo = -1.5, hi = 2.25;
  const auto x = NarrowData<In>(rng, count, lo - 0.4, hi + 0.4);
  // Knots past float16's range and among its subnormals as well.
  auto knot_values = Random<float>(rng, knot_count, 3.0);
  for (std::int64_t k = 0; k < knot_count; k += 7) knot_values[k] *= k % 2 ? 1e5f : 1e-6f;
  const Tables<float> knots(knot_values);
  InterpolateGrid<float> grid{};
  ASSERT_TRUE(MakeInterpolateGrid<float>(lo, hi, knot_count, &grid).ok());
  std::vector<In> expected(count);
  InterpolateCpuRange(x.data(), expected.data(), 0, count, knots.host.data(), grid);
  Stream stream;
  DeviceBuffer<In> in(count + 1), out(count + 1);
  ASSERT_CUDA(cudaMemcpyAsync(in.get() + misalign, x.data(), count * sizeof(In), cudaMemcpyDefault,
                              stream));
  for (SourceKind source :
       {SourceKind::kPageableHost, SourceKind::kPinnedHost, SourceKind::kDevice}) {
    for (Placement placement : {Placement::kByValue, Placement::kConstantBank,
                                Placement::kGlobalMemory, Placement::kSharedMemory}) {
      const bool host = source != SourceKind::kDevice;
      if (placement == Placement::kByValue &&
          (!host || knot_count * sizeof(float) > kDefaultByValueBytes))
        continue;
      if (placement == Placement::kConstantBank && knot_count > 4096) continue;
      ASSERT_CUDA(cudaMemsetAsync(out.get(), 0xFF, (count + 1) * sizeof(In), stream));
      LaunchReport report;
      ASSERT_OK(LaunchInterpolateWithPlacement<In>(stream, in.get() + misalign,
                                                   out.get() + misalign, count, knots.View(source),
                                                   lo, hi, placement, &report));
      ASSERT_EQ(report.placement, placement);
      ASSERT_CUDA(cudaStreamSynchronize(stream));
      const auto all = out.Read();
      ASSERT_TRUE(SameNarrowBitsOrBothNan(
          std::vector<In>(all.begin() + misalign, all.begin() + misalign + count), expected))
          << NarrowName<In>() << ", " << count << " elements, " << knot_count << " knots, "
          << PlacementName(placement) << ", misaligned by " << misalign;
      ASSERT_EQ(all[misalign == 0 ? count : 0].bits, 0xFFFF) << "wrote outside the output";
    }
  }
  // Past what a block stages: global memory with a staged prefix, as LaunchInterpolate chooses.
  if (knot_count > 16384) {
    ASSERT_CUDA(cudaMemsetAsync(out.get(), 0xFF, (count + 1) * sizeof(In), stream));
    LaunchReport report;
    ASSERT_OK(LaunchInterpolate<In>(stream, in.get() + misalign, out.get() + misalign, count,
                                    knots.View(SourceKind::kDevice), lo, hi, &report));
    EXPECT_EQ(report.placement, Placement::kGlobalMemory);
    ASSERT_CUDA(cudaStreamSynchronize(stream));
    const auto all = out.Read();
    ASSERT_TRUE(SameNarrowBitsOrBothNan(
        std::vector<In>(all.begin() + misalign, all.begin() + misalign + count), expected))
        << NarrowName<In>() << ", " << knot_count << " knots, a staged prefix";
  }
}

TEST(InterpolateGpu, Float16AndBFloat16EveryPlacementBitwiseEqualToTheCpuKernel) {
  REQUIRE_GPU();
  std::uint64_t seed = 3000;
  for (std::int64_t count : {1, 9, 4096 + 5, 1 << 20}) {
    for (std::int64_t knots : {2, 16, 1000, 4096, 16384, 20000}) {
      if (UnderSanitizer() && count * 2 > (1 << 16)) continue;
      for (int misalign : {0, 1}) {
        CheckNarrowInterpolate<Float16>(count, knots, misalign, seed++);
        CheckNarrowInterpolate<BFloat16>(count, knots, misalign, seed++);
      }
    }
  }
}

}  // namespace
}  // namespace ops
}  // namespace constmem

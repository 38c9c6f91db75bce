// SPDX-License-Identifier: Apache-2.0
// Upfirdn's tile planning (upfirdn_plan.h), built by the host compiler alone, against arithmetic
// written out here: for many (up, down, taps, length) and each arrangement and dtype, the samples a
// plan stages cover every sample its tile's outputs read, halo and register windows included, in
// buffers large enough for their layout; a plan within its shared-memory budget wherever the tiled
// kernel is said to fit, and the tiled kernel refused where no tile can fit; the geometry's tiles,
// chunks and divisors consistent with the shape; thread counts whole warps within a block's limit.
#include "upfirdn/upfirdn_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace constmem {
namespace ops {
namespace {

using namespace upfirdn_kernels;  // NOLINT: the planning under test

struct Case {
  std::int64_t rows, n, k, up, down;
};

std::string Describe(const Case& c) {
  return std::to_string(c.rows) + " x " + std::to_string(c.n) + ", " + std::to_string(c.k) +
         " taps, up " + std::to_string(c.up) + ", down " + std::to_string(c.down);
}

// The shared memory a block may take on a GPU of compute capability 9.0.
constexpr std::size_t kHopperSharedBytes = 227 * 1024;

// Shapes over the audio rate pairs, rates not reduced, small and large Q and P, short and long
// filters, rows shorter than the filter and rows of many tiles.
std::vector<Case> Cases() {
  std::vector<Case> cases;
  const std::pair<std::int64_t, std::int64_t> rates[] = {
      {1, 1},   {1, 2},    {2, 1},     {1, 3},     {3, 1},     {3, 2},     {2, 3},      {1, 4},
      {1, 6},   {1, 7},    {1, 12},    {12, 1},    {16, 1},    {8, 2},     {2, 10},     {4, 5},
      {5, 4},   {5, 12},   {160, 147}, {147, 160}, {160, 441}, {441, 160}, {147, 1280}, {1280, 147},
      {1, 100}, {2, 4095}, {500, 3},   {841, 7},   {362, 12}};
  const std::int64_t taps[] = {1, 4, 31, 97, 255, 3201};
  const std::int64_t lengths[] = {1, 40, 3000, 480000};
  std::size_t pick = 0;
  for (const auto& [up, down] : rates) {
    for (std::int64_t k : taps) {
      // Two lengths a rate pair and tap count, in turn, to keep the test quick.
      for (int l = 0; l < 2; ++l) cases.push_back({2, lengths[pick++ % 4], k, up, down});
    }
  }
  cases.push_back({1, 480000, 15521, 1280, 147});  // 11.025 kHz -> 96 kHz
  cases.push_back({1, 480000, 15583, 147, 1280});  // 96 kHz -> 11.025 kHz
  cases.push_back({1, 480000, 20000, 1, 100});     // the halo in chunks beside the smallest tile
  cases.push_back({1, 480000, 24000, 841, 7});
  cases.push_back({1, 480000, 4097, 1, 1});  // past kHaloChunkTerms at up 1
  return cases;
}

std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The terms of phase p: the m with p + m * up < k.
std::int64_t PhaseTerms(std::int64_t p, std::int64_t k, std::int64_t up) {
  return p < k ? (k - 1 - p) / up + 1 : 0;
}

// f(c, per_warp, plan, g) for each case and arrangement with the plan and geometry the launcher
// makes on a GPU of compute capability 9.0 (the taps staged before the tile buffers), where it runs
// the tiled kernel, not the direct one; how many it took.
template <class T, class F>
int ForEachLaunchPlan(std::int64_t chunk_terms, F&& f) {
  int tiled = 0;
  for (const Case& c : Cases()) {
    UpfirdnShape shape;
    EXPECT_TRUE(MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &shape).ok()) << Describe(c);
    for (bool per_warp : {true, false}) {
      const std::size_t taps_bytes =
          per_warp ? RoundUpTo16(shape.taps * sizeof(ComputeTypeOf<T>)) : TapRowsBytes<T>(shape);
      if (!TiledFits<T>(shape, std::min(kHopperSharedBytes - taps_bytes, kTiledMostBytes))) {
        continue;
      }
      const TilePlan plan = ChooseTilePlan<T>(shape, per_warp, kHopperSharedBytes - taps_bytes,
                                              chunk_terms, taps_bytes);
      f(c, per_warp, plan, MakeTiledGeometry<T>(shape, plan, taps_bytes));
      ++tiled;
      if (testing::Test::HasFailure()) return tiled;
    }
  }
  return tiled;
}

// Every sample that an output of tile `tile` reads for the terms of chunk `chunk` lies among the
// g.staged samples the kernel stages for them, which start at the tile's first base less
// m0 + halo_terms - 1 + lead. Output i (c + s * P) has phase p = i * down mod up and base
// b = i * down div up, and reads sample b - m for its terms m of the chunk; a register window
// reaches up to U - 1 samples further back (below its chunk's first term), which the lead covers.
void ExpectTileCovered(const Case& c, const Geometry& g, std::int64_t tile, int chunk,
                       std::int64_t window_terms) {
  const std::int64_t P = g.period, Q = g.stride, S = g.tile_s;
  const std::int64_t m0 = static_cast<std::int64_t>(chunk) * g.halo_terms;
  const std::int64_t t = tile % g.tiles_per_row;
  const std::int64_t first = t * S * Q - m0 - (g.halo_terms - 1) - g.lead;
  const std::int64_t end = first + g.staged;
  ASSERT_GE(g.lead, window_terms - 1) << Describe(c);
  for (std::int64_t s = t * S; s < (t + 1) * S; ++s) {
    for (std::int64_t phase = 0; phase < P; ++phase) {
      const std::int64_t i = phase + s * P;
      if (i >= g.outputs) continue;
      const std::int64_t p = i * c.down % c.up, b = i * c.down / c.up;
      const std::int64_t terms = std::min(PhaseTerms(p, c.k, c.up), m0 + g.halo_terms);
      if (terms <= m0) continue;
      // Its samples of the chunk: b - (terms - 1) ... b - m0.
      ASSERT_GE(b - (terms - 1), first)
          << Describe(c) << ", tile " << tile << ", chunk " << chunk << ", output " << i;
      ASSERT_LT(b - m0, end) << Describe(c) << ", tile " << tile << ", chunk " << chunk
                             << ", output " << i;
    }
  }
}

// Whether the kernel for this plan reads its samples by residue in windows compiled for Q.
template <class T>
bool ResidueWindowsFor(const Geometry& g, bool per_warp) {
  return sizeof(ComputeTypeOf<T>) == 4 && per_warp && g.period == 1 &&
         (g.stride == 4 || g.stride == 6 || g.stride == 12);
}

// The buffers a plan asks for hold what the kernel puts in them: each sample buffer the staged
// samples in its layout (shifted for 16-byte copies, one element of padding after every 32, or Q
// rows of residue_rows), the output buffer S * P outputs shifted for 16-byte stores, and 16-bit
// data a landing buffer of the staged samples as they are.
template <class T>
void ExpectBuffersHoldTheTile(const Case& c, const TilePlan& plan, bool per_warp) {
  using C = ComputeTypeOf<T>;
  const std::int64_t Q = c.down / std::gcd(c.up, c.down), P = c.up / std::gcd(c.up, c.down);
  const auto align = static_cast<std::int64_t>(16 / sizeof(T));  // elements of a 16-byte copy
  const std::int64_t staged = plan.staged;
  ASSERT_EQ(staged, plan.lead + plan.halo_terms - 1 + plan.s * Q) << Describe(c);
  if (plan.residue_rows > 0) {
    ASSERT_TRUE(per_warp && P == 1 && Q >= 4) << Describe(c);
    EXPECT_GE(plan.residue_rows * Q, staged) << Describe(c);
    EXPECT_GE(plan.in_elements, plan.residue_rows * Q) << Describe(c);
  } else if (per_warp && Q >= 4) {
    ASSERT_GT(P, 1) << Describe(c) << ": one phase at Q >= 4 stages by residue";
    EXPECT_GE(plan.in_elements, staged + (staged - 1) / 32) << Describe(c);  // padded
  } else {
    EXPECT_GE(plan.in_elements, staged + align - 1) << Describe(c);  // shifted
  }
  EXPECT_EQ(plan.in_elements % align, 0) << Describe(c);
  const std::int64_t out_elements = plan.s * P + align - 1;
  const std::size_t least =
      sizeof(T) == sizeof(C)
          ? (2 * plan.in_elements + out_elements) * sizeof(T)
          : (staged + align - 1) * sizeof(T) + (plan.in_elements + out_elements) * sizeof(C);
  EXPECT_GE(plan.bytes, least) << Describe(c);
  EXPECT_EQ(plan.bytes % 16, 0u) << Describe(c);
  if (sizeof(T) != sizeof(C)) {
    EXPECT_GE(plan.landing_bytes, (staged + align - 1) * sizeof(T)) << Describe(c);
    EXPECT_EQ(plan.landing_bytes % 16, 0u) << Describe(c);
  } else {
    EXPECT_EQ(plan.landing_bytes, 0u) << Describe(c);
  }
}

// The geometry's tiles cover each row's outputs, its chunks each phase's terms, and its divisors
// divide by what they name.
void ExpectGeometryOfShape(const Case& c, const TilePlan& plan, const Geometry& g) {
  const std::int64_t P = c.up / std::gcd(c.up, c.down), Q = c.down / std::gcd(c.up, c.down);
  const std::int64_t outputs = g.outputs, S = plan.s;
  EXPECT_EQ(g.period, P) << Describe(c);
  EXPECT_EQ(g.stride, Q) << Describe(c);
  ASSERT_GE(g.tiles_per_row * S * P, outputs) << Describe(c);
  ASSERT_LT((g.tiles_per_row - 1) * S * P, outputs) << Describe(c);
  ASSERT_EQ(g.tiles, c.rows * g.tiles_per_row) << Describe(c);
  const std::int64_t most_terms = CeilDiv(c.k, c.up);
  ASSERT_GE(static_cast<std::int64_t>(g.halo_chunks) * g.halo_terms, most_terms) << Describe(c);
  ASSERT_LT(static_cast<std::int64_t>(g.halo_chunks - 1) * g.halo_terms, most_terms) << Describe(c);
  EXPECT_EQ(g.tile_s, S) << Describe(c);
  EXPECT_EQ(g.staged, plan.staged) << Describe(c);
  const std::int64_t groups = CeilDiv(S, kOutputs);
  for (std::uint32_t n : {0u, 1u, 6u, 7u, 31u, 1000u, 65535u, 1000003u}) {
    EXPECT_EQ(g.by_groups.Divide(n), n / groups) << Describe(c) << ", " << n;
    EXPECT_EQ(g.by_period.Divide(n), n / P) << Describe(c) << ", " << n;
    EXPECT_EQ(g.by_up.Divide(n), n / c.up) << Describe(c) << ", " << n;
    EXPECT_EQ(g.by_stride.Divide(n), n / Q) << Describe(c) << ", " << n;
  }
}

template <class T>
void CheckPlans(std::int64_t chunk_terms) {
  const int tiled = ForEachLaunchPlan<T>(chunk_terms, [](const Case& c, bool per_warp,
                                                         const TilePlan& plan, const Geometry& g) {
    // The buffers' layout is the arrangement's the kernel is compiled for (plan.per_warp says
    // whether the launcher picks that arrangement for a table read by lanes apart).
    ExpectBuffersHoldTheTile<T>(c, plan, per_warp);
    ExpectGeometryOfShape(c, plan, g);
    if (testing::Test::HasFatalFailure()) return;
    const bool windows = ResidueWindowsFor<T>(g, per_warp);
    const std::int64_t window_terms = windows ? ResidueWindowTerms<T>(g.stride) : kWindowTerms<T>;
    if (windows) {
      // Every window starts at residue 0: its first sample, lead + halo_terms - U before the
      // tile's first base, is a multiple of Q there.
      EXPECT_EQ((g.lead + g.halo_terms) % g.stride, 0) << Describe(c);
      EXPECT_EQ(window_terms % g.stride, 0) << Describe(c);
    }
    // The first two tiles and the last of the second row, the first chunk and the last.
    for (std::int64_t tile : {g.tiles_per_row, g.tiles_per_row + 1, 2 * g.tiles_per_row - 1}) {
      if (tile >= g.tiles) continue;
      for (int chunk : {0, g.halo_chunks - 1}) {
        ExpectTileCovered(c, g, tile, chunk, window_terms);
        if (testing::Test::HasFatalFailure()) return;
      }
    }
  });
  EXPECT_GT(tiled, 100);
}

TEST(UpfirdnPlan, StagedSamplesCoverEveryTermOfTheTile) {
  CheckPlans<float>(kHaloChunkTerms);
  CheckPlans<double>(kHaloChunkTerms);
  CheckPlans<Float16>(kHaloChunkTerms);
  CheckPlans<BFloat16>(kHaloChunkTerms);
}

// Chunks of a few terms, as the emulated tests walk short filters: partial last chunks, phases with
// fewer terms than a chunk, residue windows whose chunks are not a multiple of Q.
TEST(UpfirdnPlan, StagedSamplesCoverEveryTermInShortChunks) {
  for (std::int64_t chunk_terms : {1, 3, 17, 40}) {
    CheckPlans<float>(chunk_terms);
    CheckPlans<double>(chunk_terms);
    CheckPlans<BFloat16>(chunk_terms);
  }
}

// For every budget around a shape's smallest tile: where TiledFits takes the shape, the tile of
// either arrangement fits the budget; where it refuses it, the smallest tile that could run (one
// output of each phase, the halo's first chunk, the samples of Q bases and of a register window
// in two buffers, P outputs) does not fit.
template <class T>
void CheckBudgets(const Case& c) {
  using C = ComputeTypeOf<T>;
  UpfirdnShape shape;
  ASSERT_TRUE(MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &shape).ok()) << Describe(c);
  const std::int64_t P = c.up / std::gcd(c.up, c.down), Q = c.down / std::gcd(c.up, c.down);
  const std::int64_t halo = std::min<std::int64_t>(CeilDiv(c.k, c.up), kHaloChunkTerms);
  const std::int64_t samples = kWindowTerms<T> + halo - 1 + Q;
  const std::size_t smallest = sizeof(T) == sizeof(C)
                                   ? (2 * samples + P) * sizeof(T)
                                   : samples * (sizeof(T) + sizeof(C)) + P * sizeof(C);
  bool fitted = false;
  for (std::size_t most = 256; most <= kTiledMostBytes; most += most < 16 * 1024 ? 64 : 1024) {
    const bool fits = TiledFits<T>(shape, most);
    if (most < smallest) {
      ASSERT_FALSE(fits) << Describe(c) << ", " << most << " bytes, the smallest tile " << smallest;
    }
    if (fitted) {
      ASSERT_TRUE(fits) << Describe(c) << ": " << most << " bytes, fewer fitted";
    }
    fitted = fits;
    if (!fits) continue;
    for (bool per_warp : {true, false}) {
      const TilePlan plan = ChooseTilePlan<T>(shape, per_warp, most);
      ASSERT_LE(plan.bytes, most) << Describe(c) << ", " << most << " bytes, "
                                  << (per_warp ? "per warp" : "per lane");
      ASSERT_GE(plan.s, 1) << Describe(c);
    }
  }
}

TEST(UpfirdnPlan, AFittedTileFitsItsBudgetAndAnUnfittableShapeIsRefused) {
  for (const Case& c : Cases()) {
    CheckBudgets<float>(c);
    CheckBudgets<double>(c);
    CheckBudgets<Float16>(c);
    if (HasFatalFailure()) return;
  }
  // P = 30,011, Q = 30,013: one output of each phase takes 360 KiB.
  UpfirdnShape wide_rates;
  ASSERT_TRUE(MakeUpfirdnShape(1, 100000, 64, 30011, 30013, &wide_rates).ok());
  EXPECT_FALSE(TiledFits<float>(wide_rates, kTiledMostBytes));
  // Indices past int: c * down for c < P.
  UpfirdnShape past_int;
  ASSERT_TRUE(MakeUpfirdnShape(1, 1000, 16, 3, 1073741825, &past_int).ok());
  EXPECT_FALSE(TiledFits<float>(past_int, kTiledMostBytes));
}

// The threads a block: whole warps, at least 64 and at most kThreads (the kernels' launch bounds,
// within a block's 1,024), and no other such count leaves a smaller share of its slots idle over
// the tile's rounds.
TEST(UpfirdnPlan, ThreadsAreWholeWarpsThatLeaveTheFewestIdle) {
  ASSERT_LE(kThreads, 1024);
  ASSERT_EQ(kThreads % 32, 0);
  for (int items = 1; items <= 5000; ++items) {
    const int threads = ThreadsForItems(items);
    ASSERT_EQ(threads % 32, 0) << items;
    ASSERT_GE(threads, 64) << items;
    ASSERT_LE(threads, kThreads) << items;
    auto busy = [&](int n) { return static_cast<double>(items) / (CeilDiv(items, n) * n); };
    for (int other = 64; other <= kThreads; other += 32) {
      ASSERT_GE(busy(threads), busy(other) - 1e-9) << items << " items: " << threads << " threads";
    }
  }
  EXPECT_EQ(ThreadsForItems(128), 128);
  EXPECT_EQ(ThreadsForItems(320), 160);
  EXPECT_EQ(ThreadsForItems(256 * 9), 256);
  // A geometry's block: its items (a thread's outputs of one phase, or of kPhaseBlock phases).
  ForEachLaunchPlan<float>(
      kHaloChunkTerms, [](const Case& c, bool, const TilePlan& plan, const Geometry& g) {
        const std::int64_t P = g.period, Q = g.stride;
        const bool blocks = plan.per_warp && Q == 1 && P % 4 == 0;
        EXPECT_EQ(g.phase_block, blocks ? kPhaseBlock : 1) << Describe(c);
        const std::int64_t items = P / g.phase_block * CeilDiv(plan.s, kOutputs);
        EXPECT_EQ(TileThreads(g), ThreadsForItems(static_cast<int>(items))) << Describe(c);
      });
}

// A phase a lane stages the taps by phase where the P rows of ceil(k / up) hold at most twice the
// taps: each phase's terms fit a row's entries, and the rows' bytes hold them.
TEST(UpfirdnPlan, TapRowsHoldEveryPhasesTerms) {
  for (const Case& c : Cases()) {
    UpfirdnShape shape;
    ASSERT_TRUE(MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &shape).ok()) << Describe(c);
    const std::int64_t P = c.up / std::gcd(c.up, c.down);
    const std::int64_t rows = TapRows(shape);
    const std::int64_t most_terms = CeilDiv(c.k, c.up);
    EXPECT_EQ(rows > 0, P * most_terms <= 2 * c.k) << Describe(c);
    if (rows > 0) {
      EXPECT_EQ(rows, most_terms) << Describe(c);
      for (std::int64_t phase = 0; phase < P; ++phase) {
        ASSERT_LE(PhaseTerms(phase * c.down % c.up, c.k, c.up), rows) << Describe(c);
      }
    }
    const std::size_t bytes = TapRowsBytes<float>(shape);
    EXPECT_GE(bytes, static_cast<std::size_t>(rows > 0 ? P * rows : c.k) * sizeof(float))
        << Describe(c);
    EXPECT_EQ(bytes % 16, 0u) << Describe(c);
  }
}

// The Q a kernel is compiled for: Q of 1 to 3; 4, 6 and 12 for float32 one phase a warp with one
// phase (residue windows); else 0, Q read at run time.
TEST(UpfirdnPlan, CompiledStrideIsTheSpecialisedQ) {
  for (const Case& c : Cases()) {
    UpfirdnShape shape;
    ASSERT_TRUE(MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &shape).ok()) << Describe(c);
    const std::int64_t P = c.up / std::gcd(c.up, c.down), Q = c.down / std::gcd(c.up, c.down);
    for (bool per_warp : {true, false}) {
      const bool windows = per_warp && P == 1 && (Q == 4 || Q == 6 || Q == 12);
      const std::int64_t expected = Q <= 3 ? Q : 0;
      EXPECT_EQ(CompiledStride<float>(shape, per_warp), windows ? Q : expected) << Describe(c);
      EXPECT_EQ(CompiledStride<double>(shape, per_warp), expected) << Describe(c);
      EXPECT_EQ(CompiledStride<Float16>(shape, per_warp), windows ? Q : expected) << Describe(c);
    }
  }
}

// The longest filters whose whole halo the tiled kernel stages at up 1 and 2, past which it walks
// the terms in chunks: bench/crossover_bench.py crosses this boundary by its tap counts, which
// must follow the tile's plan when it changes. Rates whose P + Q leave no room for a tile run the
// direct kernel whatever the filter's length; a large Q whose tile of 32 threads' outputs does not
// fit beside a chunk stages a halo it fits whole, and where that does not fit either walks chunks
// beside a smaller tile (20,000 taps at 1/100).
TEST(UpfirdnPlan, LongFiltersAreTiledInChunksOfTerms) {
  for (auto [up, longest] : {std::pair<std::int64_t, std::int64_t>{1, 2048}, {2, 4096}}) {
    UpfirdnShape inside, outside, longest_table;
    ASSERT_TRUE(MakeUpfirdnShape(8, 480000, longest, up, 1, &inside).ok());
    ASSERT_TRUE(MakeUpfirdnShape(8, 480000, longest + 1, up, 1, &outside).ok());
    ASSERT_TRUE(MakeUpfirdnShape(8, 480000, kUpfirdnMaxTaps, up, 1, &longest_table).ok());
    EXPECT_EQ(HaloTerms<float>(inside, kTiledMostBytes), (longest + up - 1) / up) << "up " << up;
    EXPECT_EQ(HaloTerms<float>(outside, kTiledMostBytes), kHaloChunkTerms) << "up " << up;
    EXPECT_EQ(ChooseTilePlan<float>(outside, true).halo_terms, kHaloChunkTerms) << "up " << up;
    EXPECT_TRUE(TiledFits<float>(longest_table, kTiledMostBytes)) << "up " << up;
  }
  UpfirdnShape large_q;  // 224 outputs at Q = 400 take 700 KiB: the halo of 3,000 terms whole
  ASSERT_TRUE(MakeUpfirdnShape(1, 480000, 3000, 1, 400, &large_q).ok());
  EXPECT_EQ(HaloTerms<float>(large_q, kTiledMostBytes), 3000);
  UpfirdnShape long_large_q;
  ASSERT_TRUE(MakeUpfirdnShape(1, 480000, 20000, 1, 100, &long_large_q).ok());
  EXPECT_TRUE(TiledFits<float>(long_large_q, kTiledMostBytes));
  EXPECT_EQ(HaloTerms<float>(long_large_q, kTiledMostBytes), kHaloChunkTerms);
}

// Where TiledFits takes a shape for some bytes, either arrangement's smallest tile fits them: a
// phase a lane aligns its samples for 16-byte copies, up to 16 bytes more than one phase a warp's
// padded buffers over a short span (24,000 taps at 841/7 beside its taps staged by phase on a GPU
// of 99 KiB a block: 16 bytes past it). Every budget around the smallest tile's size.
TEST(UpfirdnPlan, TheSmallestTileFitsInEitherArrangement) {
  const Case cases[] = {{1, 480000, 24000, 841, 7}, {1, 480000, 24974, 362, 12}};
  for (const Case& c : cases) {
    UpfirdnShape shape;
    ASSERT_TRUE(MakeUpfirdnShape(c.rows, c.n, c.k, c.up, c.down, &shape).ok());
    int tiled = 0;
    for (std::size_t most = 1024; most <= 16 * 1024; most += 4) {
      if (!TiledFits<float>(shape, most)) continue;
      ++tiled;
      for (bool per_warp : {true, false}) {
        ASSERT_LE(ChooseTilePlan<float>(shape, per_warp, most).bytes, most)
            << Describe(c) << ", " << most << " bytes, " << (per_warp ? "per warp" : "per lane");
      }
    }
    EXPECT_GT(tiled, 0) << Describe(c);
  }
}

// Integer downsampling by 4 and more stages a tile's samples by residue (one phase a warp; a phase
// a lane and other rates keep them in order) in tiles of up to kThreads threads' outputs within
// kResidueTileBudgetBytes; 7 of many phases a tile where an SM holds as many blocks.
TEST(UpfirdnPlan, IntegerDownsamplingStagesSamplesByResidue) {
  struct PlanCase {
    Case shape;
    bool by_residue;  // one phase a warp
    std::int64_t s;   // 0: not checked
  };
  const PlanCase cases[] = {
      {{64, 480000, 147, 1, 12}, true, 896},       // 96 kHz -> 8 kHz: 128 threads' outputs
      {{64, 480000, 55, 1, 4}, true, 1792},        // 32 kHz -> 8 kHz: kThreads threads'
      {{64, 480000, 81, 5, 12}, false, 0},         // 5 phases: padded
      {{64, 480000, 15521, 1280, 147}, false, 7},  // 11.025 kHz -> 96 kHz: 7 of 1,280 phases
      {{64, 480000, 31, 1, 3}, false, 0},          // 48 kHz -> 16 kHz: a specialised Q
  };
  for (const PlanCase& c : cases) {
    UpfirdnShape shape;
    ASSERT_TRUE(
        MakeUpfirdnShape(c.shape.rows, c.shape.n, c.shape.k, c.shape.up, c.shape.down, &shape)
            .ok());
    for (bool per_warp : {true, false}) {
      // The taps staged in shared memory, as the launcher places tables of these sizes.
      const std::size_t taps_bytes = (shape.taps * sizeof(float) + 15) / 16 * 16;
      const TilePlan plan = ChooseTilePlan<float>(shape, per_warp, kHopperSharedBytes - taps_bytes,
                                                  kHaloChunkTerms, taps_bytes);
      EXPECT_EQ(plan.residue_rows > 0, per_warp && c.by_residue) << Describe(c.shape);
      if (per_warp && c.s > 0) {
        EXPECT_EQ(plan.s, c.s) << Describe(c.shape);
      }
    }
  }
}

// Samples staged by residue: 32 consecutive samples, copied by 32 lanes to entries
// (e mod Q) * rows + e div Q, meet at most 2 to a bank, at every Q and start.
TEST(UpfirdnPlan, ResidueRowsSpreadCopiesOverTheBanks) {
  for (std::int64_t q = 4; q <= 70; ++q) {
    for (std::int64_t staged : {100, 1000, 2863}) {
      const std::int64_t rows = ResidueRows(staged, q);
      ASSERT_GE(rows * q, staged);
      for (std::int64_t first = 0; first + 32 <= staged; first += 7) {
        int per_bank[32] = {};
        for (std::int64_t e = first; e < first + 32; ++e) ++per_bank[(e % q * rows + e / q) % 32];
        ASSERT_LE(*std::max_element(per_bank, per_bank + 32), 2) << "Q " << q << ", from " << first;
      }
    }
  }
}

}  // namespace
}  // namespace ops
}  // namespace constmem

// SPDX-License-Identifier: Apache-2.0
// FirFilter's tile planning (fir_filter_plan.h), built by the host compiler alone, against
// arithmetic written out here: for every tap count a team takes and every shift within a vector,
// the samples a tile stages cover every sample its outputs read and every segment the kernels'
// rings load; the padded layout keeps staged samples apart, inside their buffer, a thread's outputs
// contiguous and a quarter warp's 16-byte loads in distinct banks; landing buffers hold what
// StageSpan writes; the shared memory of every launch is within the most a kernel asks for, which
// fits the budgets the static_asserts claim (two blocks of 256 threads an SM on sm_80 and sm_90,
// 64 KiB for blocks of 64 threads); the tile walk visits every tile of a launch exactly once across
// the teams; and the threads a block chosen are whole warps whose tiles fit the memory given.
#include "fir_filter/fir_filter_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace constmem {
namespace ops {
namespace {

using namespace fir_kernels;  // NOLINT: the planning under test

// The longest filter a team's tile takes in one pass: a warp team's, or a block team's (and a
// chunk of a longer filter).
template <int kTeam>
constexpr int kLongestTaps = kTeam == 32 ? kMaxWarpTeamTaps : static_cast<int>(kFirTiledMaxTaps);

std::string Where(int taps, int shift = 0) {
  return std::to_string(taps) + " taps, shift " + std::to_string(shift);
}

// The highest sample past a thread's first that the warp teams' tap loop loads into its ring of
// S segments of K samples: the ring whole at the start, each segment refilled S * K further on
// after its taps while whole segments of taps remain, and the ring loaded afresh for the taps left.
int WarpLoopLastRead(int taps, int segments, int k) {
  int last = segments * k - 1;
  const int whole = taps / k * k;
  for (int turn = 0; turn < whole; turn += segments * k) {
    for (int s = 0; s < segments; ++s) {
      if (s * k < whole - turn) last = std::max(last, turn + s * k + segments * k + k - 1);
    }
  }
  if (whole < taps) last = std::max(last, whole + segments * k - 1);
  return last;
}

// The same for the block teams' loop (ApplyStagedTaps), which counts its taps segment by segment.
int BlockLoopLastRead(int taps, int segments, int k) {
  int last = segments * k - 1;
  int c = 0;
  while (c <= taps - k) {
    for (int s = 0; s < segments && c <= taps - k; ++s) {
      last = std::max(last, c + segments * k + k - 1);
      c += k;
    }
  }
  if (c < taps) last = std::max(last, c + segments * k - 1);
  return last;
}

// A team's layout: its compute type and its threads, a warp or a block of either size.
template <class C, int kTeamThreads>
struct TeamOf {
  using T = C;
  static constexpr int kTeam = kTeamThreads;
};
template <class Team>
class FirFilterTeamPlan : public ::testing::Test {};
using Teams = ::testing::Types<TeamOf<float, 32>, TeamOf<double, 32>, TeamOf<float, kThreads>,
                               TeamOf<double, kThreads>, TeamOf<float, kSmallBlockThreads>,
                               TeamOf<double, kSmallBlockThreads>>;
TYPED_TEST_SUITE(FirFilterTeamPlan, Teams);

TYPED_TEST(FirFilterTeamPlan, StagedSamplesCoverEveryRead) {
  using T = typename TypeParam::T;
  constexpr int kTeam = TypeParam::kTeam;
  using Tune = FirTuning<T, kTeam>;
  constexpr int R = Tune::kOutputs, K = Tune::kTapsPerSegment, L = Tune::kLanes;
  const int last_first = (kTeam - 1) * R;  // the last thread's first staged sample
  auto segments = [](int shift) {
    switch (shift) {
      case 0:
        return RingSegments<T, 0, kTeam>();
      case 1:
        return RingSegments<T, 1, kTeam>();
      case 2:
        return RingSegments<T, 2, kTeam>();
      default:
        return RingSegments<T, 3, kTeam>();
    }
  };
  for (int shift = 0; shift < L; ++shift) {
    const int s = segments(shift);
    // A segment's taps meet samples r + j + shift of the ring from the segment's start, for the
    // outputs r < R and the segment's taps j < K.
    EXPECT_GE(s * K, R + K - 1 + shift) << "shift " << shift;
    for (int taps = 1; taps <= kLongestTaps<kTeam>; ++taps) {
      const int staged = StagedSamples<T, kTeam>(taps);
      ASSERT_EQ(staged % L, 0) << Where(taps, shift);
      // Output r of thread t reads samples t * R + shift + r + j for the taps j.
      ASSERT_LT(last_first + shift + (R - 1) + (taps - 1), staged) << Where(taps, shift);
      ASSERT_GE(staged, kTeam * R + taps - 1) << Where(taps, shift);  // the tile's outputs' reads
      const int last_read =
          kTeam == 32 ? WarpLoopLastRead(taps, s, K) : BlockLoopLastRead(taps, s, K);
      ASSERT_LT(last_first + last_read, staged) << Where(taps, shift);
    }
  }
}

// The 16-byte bank group (of the 8 a 128-byte row of shared memory spans) of element `index`.
template <class T>
int BankGroup(int index) {
  return static_cast<int>(static_cast<std::size_t>(index) * sizeof(T) / 16 % 8);
}

TYPED_TEST(FirFilterTeamPlan, PaddedIndicesStayApartInsideTheBuffer) {
  using T = typename TypeParam::T;
  constexpr int kTeam = TypeParam::kTeam;
  using Tune = FirTuning<T, kTeam>;
  constexpr int R = Tune::kOutputs, K = Tune::kTapsPerSegment, L = Tune::kLanes;
  for (int taps : {1, 2, 5, 17, kLongestTaps<kTeam> - 1, kLongestTaps<kTeam>}) {
    const int staged = StagedSamples<T, kTeam>(taps);
    const int buffer = BufferElements<T, kTeam>(taps);
    // Each buffer starts on a 16-byte boundary after the one before.
    ASSERT_EQ(static_cast<std::size_t>(buffer) * sizeof(T) % 16, 0u) << Where(taps);
    for (int e = 0; e < staged; ++e) {
      const int at = Padded<T, kTeam>(e);
      if (e > 0) {
        ASSERT_GT(at, (Padded<T, kTeam>(e - 1))) << Where(taps) << ", sample " << e;
      }
      ASSERT_GE(at, 0);
      if (e % L == 0) {
        // A staged vector: 16-byte aligned, its lanes together, the whole of it in the buffer.
        ASSERT_EQ(at % L, 0) << Where(taps) << ", sample " << e;
        ASSERT_EQ((PaddedVector<T, kTeam>(e / L) * L), at) << Where(taps) << ", sample " << e;
        for (int l = 1; l < L; ++l) ASSERT_EQ((Padded<T, kTeam>(e + l)), at + l);
        ASSERT_LE(at + L, buffer) << Where(taps) << ", sample " << e;
      }
    }
    // A thread's outputs go to shared memory as consecutive vectors from its first sample, and
    // its loads offset from there pad one vector a kOutputs samples (whole segments at a time).
    for (int t = 0; t < kTeam; ++t) {
      const int first = Padded<T, kTeam>(t * R);
      for (int i = 0; i < R; ++i) ASSERT_EQ((Padded<T, kTeam>(t * R + i)), first + i) << t;
      for (int offset = 0; t * R + offset + K <= staged; offset += K) {
        const int padded_offset = Tune::kPadded ? offset + offset / R * L : offset;
        ASSERT_EQ((Padded<T, kTeam>(t * R + offset)), first + padded_offset) << t << ", " << offset;
      }
    }
    // The 8 threads of a quarter warp, kOutputs samples apart, load their vectors at the same
    // offset in 8 distinct bank groups.
    for (int quarter = 0; quarter < kTeam / 8; ++quarter) {
      for (int offset = 0; (quarter * 8 + 7) * R + offset + L <= staged; offset += L) {
        bool taken[8] = {};
        for (int t = quarter * 8; t < quarter * 8 + 8; ++t) {
          const int group = BankGroup<T>(Padded<T, kTeam>(t * R + offset));
          ASSERT_FALSE(taken[group]) << Where(taps) << ", thread " << t << ", offset " << offset;
          taken[group] = true;
        }
      }
    }
  }
}

// StageSpan writes the 16-byte chunks spanning the staged samples from a shift of up to 7.
template <class In, int kTeam>
void ExpectLandingHoldsTheSpan() {
  using T = ComputeTypeOf<In>;
  static_assert(kLanded<In> && sizeof(In) == 2, "16-bit data lands");
  ASSERT_EQ(static_cast<std::size_t>(LandingElements<In, kTeam>(1)) * sizeof(In) % 16, 0u);
  for (int taps = 1; taps <= kLongestTaps<kTeam>; ++taps) {
    const int landing = LandingElements<In, kTeam>(taps);
    ASSERT_EQ(static_cast<std::size_t>(landing) * sizeof(In) % 16, 0u) << Where(taps);
    for (int shift = 0; shift < 8; ++shift) {
      const int chunks = (shift + StagedSamples<T, kTeam>(taps) + 7) / 8;
      ASSERT_LE(chunks * 8, landing) << Where(taps, shift);
    }
  }
}

TEST(FirFilterPlan, LandingBuffersHoldWhatStageSpanWrites) {
  EXPECT_FALSE(kLanded<float>);
  EXPECT_FALSE(kLanded<double>);
  ExpectLandingHoldsTheSpan<Float16, 32>();
  ExpectLandingHoldsTheSpan<BFloat16, 32>();
  ExpectLandingHoldsTheSpan<Float16, kThreads>();
  ExpectLandingHoldsTheSpan<BFloat16, kSmallBlockThreads>();
}

// Two blocks a multiprocessor on sm_80 and sm_90: 228 KiB an SM, 1 KiB of it reserved a block.
constexpr std::size_t kTwoBlocksPerSmBytes = (228 * 1024 - 2 * 1024) / 2;
// What a block of compute capability 7.5 may take, the least of the GPUs CUDA 13 builds for.
constexpr std::size_t kTuringSharedBytes = 64 * 1024;

// The shared memory the kernels carve, as they carve it: every team's buffers of the compute type,
// then one 8-byte barrier a buffer for warp teams' bulk copies, or (16-bit data) one buffer a team
// and each team's landing buffer.
template <class In, int kTeam, int kBlock>
std::size_t CarvedBytes(int taps) {
  using T = ComputeTypeOf<In>;
  const std::size_t teams = kBlock / kTeam;
  const std::size_t buffers = kLanded<In> ? 1 : (kTeam == 32 ? 3 : 2);
  const std::size_t buffer_bytes = BufferElements<T, kTeam>(taps) * sizeof(T);
  std::size_t bytes = teams * buffers * buffer_bytes;
  if (kLanded<In>) return bytes + teams * LandingElements<In, kTeam>(taps) * sizeof(In);
  if (kTeam == 32) bytes += teams * buffers * 8;
  return bytes;
}

template <class In, int kTeam, int kBlock>
void ExpectSharedBytesFit(std::size_t budget) {
  const std::size_t most = MostSharedBytes<In, kBlock>(kTeam == 32);
  EXPECT_LE(most, budget);
  EXPECT_EQ(most, (SharedBytes<In, kTeam, kBlock>(kLongestTaps<kTeam>)));
  for (int taps = 1; taps <= kLongestTaps<kTeam>; ++taps) {
    const std::size_t bytes = SharedBytes<In, kTeam, kBlock>(taps);
    ASSERT_EQ(bytes, (CarvedBytes<In, kTeam, kBlock>(taps))) << Where(taps);
    // The kernel's attribute, set once for the longest filter, covers every launch.
    ASSERT_LE(bytes, most) << Where(taps);
  }
}

template <class In>
void ExpectSharedBytesFitEveryBlock() {
  ExpectSharedBytesFit<In, 32, kThreads>(kTwoBlocksPerSmBytes);
  ExpectSharedBytesFit<In, kThreads, kThreads>(kTwoBlocksPerSmBytes);
  ExpectSharedBytesFit<In, 32, kSmallBlockThreads>(kTuringSharedBytes);
  ExpectSharedBytesFit<In, kSmallBlockThreads, kSmallBlockThreads>(kTuringSharedBytes);
}

TEST(FirFilterPlan, SharedBytesFitTheBudgets) {
  ExpectSharedBytesFitEveryBlock<float>();
  ExpectSharedBytesFitEveryBlock<double>();
  ExpectSharedBytesFitEveryBlock<Float16>();
  ExpectSharedBytesFitEveryBlock<BFloat16>();
}

// Every team of a launch of `blocks` blocks walks from Start, Advance by Advance while its row is
// in the tensor; team t (of the block's kTeamsPerBlock, then the next block's) visits tiles t, t +
// teams, t + 2 teams, ... in row-major order.
template <class Tune>
void ExpectWalkVisitsEveryTileOnce(std::int64_t rows, std::int64_t outputs, unsigned blocks) {
  const TileWalk<Tune> walk(outputs, blocks);
  const std::int64_t tiles_per_row = (outputs + Tune::kTile - 1) / Tune::kTile;
  const std::int64_t teams = std::int64_t{blocks} * Tune::kTeamsPerBlock;
  ASSERT_EQ(walk.tiles_per_row, tiles_per_row);
  const std::string where = std::to_string(rows) + " rows of " + std::to_string(outputs) +
                            " outputs, " + std::to_string(blocks) + " blocks";
  std::vector<int> visits(static_cast<std::size_t>(rows * tiles_per_row), 0);
  for (std::int64_t team = 0; team < teams; ++team) {
    std::int64_t row = 0, column = 0, expected = team;
    for (walk.Start(team, &row, &column); row < rows; walk.Advance(&row, &column)) {
      ASSERT_GE(column, 0) << where;
      ASSERT_LT(column, tiles_per_row) << where;
      ASSERT_EQ(row * tiles_per_row + column, expected) << where << ", team " << team;
      ++visits[static_cast<std::size_t>(row * tiles_per_row + column)];
      expected += teams;
    }
    ASSERT_GE(expected, rows * tiles_per_row) << where << ", team " << team;
  }
  for (std::size_t tile = 0; tile < visits.size(); ++tile) {
    ASSERT_EQ(visits[tile], 1) << where << ", tile " << tile;
  }
}

// Grids of fewer teams than a row's tiles, of about a row's, and of more than the tensor's.
template <class Tune>
void ExpectWalks() {
  constexpr std::int64_t kTile = Tune::kTile, kTeamsPerBlock = Tune::kTeamsPerBlock;
  for (std::int64_t rows : {1, 2, 3, 7, 40}) {
    for (std::int64_t outputs :
         {std::int64_t{1}, kTile - 1, kTile, kTile + 1, 3 * kTile, 5 * kTile + 3, 16 * kTile - 1}) {
      const std::int64_t per_row = (outputs + kTile - 1) / kTile, tiles = rows * per_row;
      for (std::int64_t teams :
           {std::int64_t{1}, std::int64_t{2}, std::int64_t{3}, per_row - 1, per_row, per_row + 1,
            2 * per_row + 1, tiles - 1, tiles, tiles + 5, 3 * tiles + 1}) {
        const std::int64_t blocks = (teams + kTeamsPerBlock - 1) / kTeamsPerBlock;
        if (blocks >= 1) {
          ExpectWalkVisitsEveryTileOnce<Tune>(rows, outputs, static_cast<unsigned>(blocks));
        }
      }
    }
  }
}

TEST(FirFilterPlan, TileWalkVisitsEveryTileOnce) {
  ExpectWalks<FirTuning<float, 32, kThreads>>();
  ExpectWalks<FirTuning<double, 32, kSmallBlockThreads>>();
  ExpectWalks<FirTuning<float, kThreads, kThreads>>();
  ExpectWalks<FirTuning<double, kSmallBlockThreads, kSmallBlockThreads>>();
}

// The shared memory a launch of `threads` a block asks for (the attribute its kernel is given):
// its team's tiles at their longest filter, warp teams for filters of up to 64 taps.
template <class In>
std::size_t NeededBytes(int threads, std::int64_t taps) {
  const bool warp = taps <= kMaxWarpTeamTaps;
  const int longest = warp ? kMaxWarpTeamTaps : static_cast<int>(kFirTiledMaxTaps);
  if (threads == kThreads) {
    return warp ? SharedBytes<In, 32, kThreads>(longest)
                : SharedBytes<In, kThreads, kThreads>(longest);
  }
  return warp ? SharedBytes<In, 32, kSmallBlockThreads>(longest)
              : SharedBytes<In, kSmallBlockThreads, kSmallBlockThreads>(longest);
}

template <class In>
void ExpectBlockThreadsFit() {
  const std::int64_t tap_counts[] = {1,   2,    17,   63,   64,    65,         100,
                                     513, 2047, 2048, 2049, 20000, kFirMaxTaps};
  for (std::int64_t taps : tap_counts) {
    std::vector<std::size_t> budgets = {
        0, 16 * 1024, 48 * 1024, kTuringSharedBytes, 99 * 1024, kTwoBlocksPerSmBytes, 227 * 1024};
    for (int threads : {kThreads, kSmallBlockThreads}) {
      const std::size_t needed = NeededBytes<In>(threads, taps);
      budgets.insert(budgets.end(), {needed - 1, needed, needed + 1});
    }
    for (std::size_t budget : budgets) {
      const int threads = FirFittingBlockThreads<In>(taps, budget);
      const std::string where = std::to_string(taps) + " taps, " + std::to_string(budget) + " B";
      ASSERT_EQ(threads % 32, 0) << where;
      ASSERT_TRUE(threads == 0 || threads == kThreads || threads == kSmallBlockThreads) << where;
      if (threads != 0) {
        ASSERT_LE(NeededBytes<In>(threads, taps), budget) << where;
      }
      // The larger block wherever it fits; none only where neither fits.
      if (threads != kThreads) {
        ASSERT_GT(NeededBytes<In>(kThreads, taps), budget) << where;
      }
      if (threads == 0) {
        ASSERT_GT(NeededBytes<In>(kSmallBlockThreads, taps), budget) << where;
      }
    }
    // Blocks of 256 threads on sm_90, blocks of 64 on every GPU.
    EXPECT_EQ(FirFittingBlockThreads<In>(taps, 227 * 1024), kThreads) << taps;
    EXPECT_NE(FirFittingBlockThreads<In>(taps, kTuringSharedBytes), 0) << taps;
  }
}

TEST(FirFilterPlan, BlockThreadsFitTheSharedMemoryGiven) {
  ExpectBlockThreadsFit<float>();
  ExpectBlockThreadsFit<double>();
  ExpectBlockThreadsFit<Float16>();
  ExpectBlockThreadsFit<BFloat16>();
  // float64 tiles of 256 threads past 64 taps need more than 99 KiB (compute capability 8.6 and
  // 8.9).
  EXPECT_EQ(FirFittingBlockThreads<double>(64, 99 * 1024), kThreads);
  EXPECT_EQ(FirFittingBlockThreads<double>(65, 99 * 1024), kSmallBlockThreads);
}

}  // namespace
}  // namespace ops
}  // namespace constmem

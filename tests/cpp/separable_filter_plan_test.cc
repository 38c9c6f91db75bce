// SPDX-License-Identifier: Apache-2.0
// SeparableFilter's launch planning (separable_filter_plan.h), built by the host compiler alone,
// against arithmetic written out here: for filters of 1 to 127 taps (and longer), one channel or
// up to kMaxInterleavedChannels interleaved, in every dtype, a tile's staged rows hold every sample
// its outputs read and every sample its ring of samples loads, its narrow rows' words stay within
// a row's pitch, and its shared memory adds up; for many shapes (heights, widths, channels, planes
// or channels-last, interleaved or not, shared or per-image taps) the work items of a launch, tiles
// or register strips over segments of rows of each plane, write every output once at the CPU
// kernel's offset (SeparableOffset) with their image's taps; the shared memory of the largest tiles
// and of the two passes is what the comments say, and the tile chosen for a block fits the bytes it
// is given, the first that does in the launcher's order; the register kernel's halo lanes hold its
// halo and it takes only the shapes it is built for.
#include "separable_filter/separable_filter_plan.h"

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

using namespace separable_kernels;  // NOLINT: the planning under test

std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::string Describe(const SeparableShape& s) {
  return "[" + std::to_string(s.images) + ", " + std::to_string(s.channels) + ", " +
         std::to_string(s.height) + ", " + std::to_string(s.width) + "] " +
         (s.layout == SeparableLayout::kPlanes ? "planes" : "channels-last") + ", kh " +
         std::to_string(s.kh) + ", kw " + std::to_string(s.kw) +
         (s.per_image_taps ? ", taps per image" : "");
}

// Pointers with a given alignment for the planning's alignment tests (never dereferenced).
alignas(64) unsigned char g_buffer[256];
template <class In>
const In* At(std::size_t byte_offset) {
  return reinterpret_cast<const In*>(g_buffer + byte_offset);
}

// ---- Slide's ring ----

// A step of K = kTapsPerRingSegment taps for R outputs reads R + K - 1 consecutive samples: the
// ring's RingSegments<R>() segments of K hold them, and are the fewest that do.
template <int R>
void ExpectRingHoldsAStep() {
  constexpr int K = kTapsPerRingSegment, S = RingSegments<R>();
  EXPECT_GE(S * K, R + K - 1) << R << " outputs";
  EXPECT_LT((S - 1) * K, R + K - 1) << R << " outputs";
}
template <int... R>
void ExpectRingsHoldASteps(std::integer_sequence<int, R...>) {
  (ExpectRingHoldsAStep<R + 1>(), ...);
}

TEST(SeparablePlan, RingSegmentsHoldAStepsSamples) {
  ExpectRingsHoldASteps(std::make_integer_sequence<int, 48>());
}

// ---- The fused kernel's tiles ----

// The column pass reads ring row (base + n) mod ring_rows for the n < kh + RingSegments * K that
// Slide loads, as base + n or, past the ring's end, base + n - ring_rows: in the ring for every
// base and kh.
template <class Tile>
void ExpectColumnPassReadsWithinTheRing() {
  constexpr int K = kTapsPerRingSegment, S = RingSegments<Tile::kColumnOutputs>();
  for (int kh = 1; kh <= 300; ++kh) {
    const int ring_rows = Tile::kRows + kh - 1;
    for (int base = 0; base < ring_rows; ++base) {
      const int wrap = ring_rows - base, last = kh + S * K - 1;
      const int row = last < wrap ? base + last : base + last - ring_rows;
      ASSERT_GE(row, 0) << "kh " << kh << ", base " << base;
      ASSERT_LT(row, ring_rows) << "kh " << kh << ", base " << base;
    }
  }
}

TEST(SeparablePlan, ColumnPassReadsWithinTheRing) {
  ExpectColumnPassReadsWithinTheRing<LargeTile>();
  ExpectColumnPassReadsWithinTheRing<SmallTile>();
}

// For `interleaved` channels a row: the row pass's covered span is whole groups of interleaved *
// kRowOutputs elements, the fewest that cover kWidth; its covered / kRowOutputs tasks (task t:
// outputs first + k * interleaved, k < kRowOutputs) take each of its elements once. Returns the
// largest `first`.
template <class Tile>
int ExpectRowPassTasksCoverTheTile(int interleaved) {
  constexpr int RH = Tile::kRowOutputs;
  const int covered = CoveredElements<Tile>(interleaved);
  const int group = interleaved * RH;
  EXPECT_EQ(covered % group, 0) << interleaved << " channels";
  EXPECT_GE(covered, Tile::kWidth) << interleaved << " channels";
  EXPECT_LT(covered - group, Tile::kWidth) << interleaved << " channels";
  std::vector<int> taken(static_cast<std::size_t>(covered), 0);
  int last_first = 0;
  for (int task = 0; task < covered / RH; ++task) {
    const int first = task / interleaved * group + task % interleaved;
    last_first = std::max(last_first, first);
    for (int k = 0; k < RH; ++k) {
      const int e = first + k * interleaved;
      if (e >= covered) {
        ADD_FAILURE() << interleaved << " channels, task " << task << ": element " << e;
        return last_first;
      }
      ++taken[static_cast<std::size_t>(e)];
    }
  }
  EXPECT_TRUE(std::all_of(taken.begin(), taken.end(), [](int n) { return n == 1; }))
      << interleaved << " channels";
  return last_first;
}

// A tile's shared memory for `interleaved` channels and every kw: the staged width is exactly the
// samples its outputs read (output e < covered reads staged samples e + j * interleaved, j < kw);
// the pitch holds what the row pass's ring loads past them (samples n < kw + RingSegments * K of
// each task, after the up to E - 1 elements a narrow row starts before its first) and the 4-byte
// words a narrow row is copied in; rows are an odd number of banks apart; the map has an entry a
// staged sample in whole 16-byte vectors; the ring holds kRows + kh - 1 rows of kTmpPitch; each
// part starts on 16 bytes, and they add up.
template <class Tile, class In>
void CheckStagedRows() {
  using T = ComputeTypeOf<In>;
  using Staged = StagedType<In, T>;
  constexpr int K = kTapsPerRingSegment, S = RingSegments<Tile::kRowOutputs>();
  constexpr int E = sizeof(Staged) < 4 ? 4 / static_cast<int>(sizeof(Staged)) : 1;
  for (int inter = 1; inter <= kMaxInterleavedChannels; ++inter) {
    const int last_first = ExpectRowPassTasksCoverTheTile<Tile>(inter);
    const int covered = CoveredElements<Tile>(inter);
    for (int kw = 1; kw <= 300; kw += kw < 130 ? 1 : 17) {
      const int kh = (kw * 7) % 127 + 1;
      const SharedLayout<Tile, In, T> layout(inter, kw, kh);
      const std::string what = std::to_string(Tile::kThreads) + " threads, " +
                               std::to_string(sizeof(In)) + "-byte elements, " +
                               std::to_string(inter) + " channels, kw " + std::to_string(kw);
      ASSERT_EQ(layout.staged_width, covered + (kw - 1) * inter) << what;
      const int pitch = layout.staged_pitch;
      ASSERT_LT(last_first + (kw + S * K - 1) * inter + (E - 1), pitch) << what;
      for (int shift = 0; shift < E; ++shift) {
        ASSERT_LE(CeilDiv(shift + layout.staged_width, E) * E, pitch)
            << what << ", shift " << shift;
      }
      const std::size_t pitch_bytes = static_cast<std::size_t>(pitch) * sizeof(Staged);
      ASSERT_EQ(pitch_bytes % 4, 0u) << what;
      ASSERT_EQ(pitch_bytes / std::max<std::size_t>(4, sizeof(Staged)) % 2, 1u) << what;
      ASSERT_GE(layout.map_entries, layout.staged_width) << what;
      ASSERT_LT(layout.map_entries - 4, layout.staged_width) << what;
      ASSERT_EQ(layout.map_entries % 4, 0) << what;
      ASSERT_EQ(layout.ring_bytes,
                static_cast<std::size_t>(Tile::kRows + kh - 1) * (Tile::kWidth + 4) * sizeof(T))
          << what;
      const std::size_t staged = static_cast<std::size_t>(Tile::kRows) * pitch_bytes;
      ASSERT_GE(layout.staged_bytes, staged) << what;
      ASSERT_LT(layout.staged_bytes, staged + 16) << what;
      ASSERT_EQ(layout.map_bytes, static_cast<std::size_t>(layout.map_entries) * sizeof(int))
          << what;
      ASSERT_EQ(layout.ring_bytes % 16, 0u) << what;
      ASSERT_EQ(layout.staged_bytes % 16, 0u) << what;
      ASSERT_EQ(layout.Bytes(), layout.ring_bytes + layout.staged_bytes + layout.map_bytes) << what;
    }
  }
}

template <class In>
void CheckStagedRowsOfBothTiles() {
  CheckStagedRows<LargeTile, In>();
  CheckStagedRows<SmallTile, In>();
}

TEST(SeparablePlan, StagedRowsHoldEverySampleTheRowPassReads) {
  CheckStagedRowsOfBothTiles<float>();
  CheckStagedRowsOfBothTiles<double>();
  CheckStagedRowsOfBothTiles<Float16>();
  CheckStagedRowsOfBothTiles<BFloat16>();
  CheckStagedRowsOfBothTiles<std::uint8_t>();
}

constexpr std::size_t kKiB = 1024;
std::int64_t KiB(std::size_t bytes) { return CeilDiv(static_cast<std::int64_t>(bytes), 1024); }

SeparableShape Square(std::int64_t k, std::int64_t channels = 1,
                      SeparableLayout layout = SeparableLayout::kPlanes) {
  SeparableShape s;
  s.images = 2;
  s.channels = channels;
  s.height = 1080;
  s.width = 1920;
  s.layout = layout;
  s.kh = s.kw = k;
  return s;
}

template <class In>
void ExpectSmallTileFitsCapability75() {
  using T = ComputeTypeOf<In>;
  std::size_t most = 0;
  for (int kw = 1; kw <= kSeparableSmallTileMaxTaps; ++kw) {
    for (int kh = 1; kh <= kSeparableSmallTileMaxTaps; ++kh) {
      most = std::max(most, SharedLayout<SmallTile, In, T>(1, kw, kh).Bytes());
    }
  }
  EXPECT_LE(most, 64 * kKiB) << sizeof(In) << "-byte elements";
  for (int k : {1, 2, 31, 64, 127}) {
    for (auto [channels, layout] :
         {std::pair{1, SeparableLayout::kPlanes}, std::pair{3, SeparableLayout::kChannelsLast},
          std::pair{8, SeparableLayout::kChannelsLast}}) {
      bool interleave = false;
      EXPECT_NE((FusedTileThreads<In, T>(Square(k, channels, layout), 64 * kKiB, &interleave)), 0)
          << Describe(Square(k, channels, layout));
    }
  }
}

// The shared memory the comments give: the large tile's 76 KiB for float32 at 63 x 63 taps and
// 117 KiB at 127 x 127; the small tile within 64 KiB (compute capability 7.5) for every filter it
// takes, in every dtype, so that such a GPU runs every filter of up to kSeparableSmallTileMaxTaps
// in a tile, 62 KiB for float64 at 127 x 127; the large tile's longest square float32 filter on a
// GPU of 227 KiB a block (compute capability 9.0) 297 taps (bench/separable_filter_bench.cu's "k =
// 297 on an H200"); the row pass's static shared memory within the 48 KiB a block gets without
// asking.
TEST(SeparablePlan, TilesTakeTheSharedMemoryTheCommentsGive) {
  EXPECT_EQ(KiB(SharedLayout<LargeTile, float, float>(1, 63, 63).Bytes()), 76);
  EXPECT_EQ(KiB(SharedLayout<LargeTile, float, float>(1, 127, 127).Bytes()), 117);
  EXPECT_EQ(KiB(SharedLayout<SmallTile, double, double>(1, 127, 127).Bytes()), 62);
  ExpectSmallTileFitsCapability75<float>();
  ExpectSmallTileFitsCapability75<double>();
  ExpectSmallTileFitsCapability75<Float16>();
  ExpectSmallTileFitsCapability75<BFloat16>();
  ExpectSmallTileFitsCapability75<std::uint8_t>();
  bool interleave = true;
  EXPECT_EQ((FusedTileThreads<float, float>(Square(297), 227 * kKiB, &interleave)),
            LargeTile::kThreads);
  EXPECT_FALSE(interleave);
  EXPECT_EQ((FusedTileThreads<float, float>(Square(298), 227 * kKiB, &interleave)), 0);
  EXPECT_EQ(RowPassSharedBytes<float>(), kTwoPassThreads / 32 * kRowStaged * sizeof(float));
  EXPECT_EQ(RowPassSharedBytes<double>(), kTwoPassThreads / 32 * kRowStaged * sizeof(double));
  EXPECT_LE(RowPassSharedBytes<double>(), 48 * kKiB);
}

// FusedTileThreads for a block of `bytes`: the first of the large tile interleaved, the large tile
// one channel a row, the small tile interleaved, the small tile one channel a row whose shared
// memory fits (the small tile only for filters of up to kSeparableSmallTileMaxTaps taps,
// interleaved only channels-last rows of up to kMaxInterleavedChannels channels), or 0.
template <class In>
void ExpectTileChoice(const SeparableShape& s, std::size_t bytes) {
  using T = ComputeTypeOf<In>;
  const int kw = static_cast<int>(s.kw), kh = static_cast<int>(s.kh);
  const int channels = static_cast<int>(s.channels);
  const bool can_interleave =
      s.layout == SeparableLayout::kChannelsLast && channels <= kMaxInterleavedChannels;
  struct Option {
    int threads;
    bool interleave;
    std::size_t bytes;
  };
  std::vector<Option> options;
  for (bool inter : {true, false}) {
    if (inter && !can_interleave) continue;
    options.push_back({LargeTile::kThreads, inter,
                       SharedLayout<LargeTile, In, T>(inter ? channels : 1, kw, kh).Bytes()});
  }
  if (kw <= kSeparableSmallTileMaxTaps && kh <= kSeparableSmallTileMaxTaps) {
    for (bool inter : {true, false}) {
      if (inter && !can_interleave) continue;
      options.push_back({SmallTile::kThreads, inter,
                         SharedLayout<SmallTile, In, T>(inter ? channels : 1, kw, kh).Bytes()});
    }
  }
  auto fits = [&](const Option& o) { return o.bytes <= bytes; };
  const auto expected = std::find_if(options.begin(), options.end(), fits);
  bool interleave = false;
  const int threads = FusedTileThreads<In, T>(s, bytes, &interleave);
  const std::string what =
      Describe(s) + ", " + std::to_string(sizeof(In)) + "-byte elements, " + std::to_string(bytes);
  if (expected == options.end()) {
    ASSERT_EQ(threads, 0) << what;
    return;
  }
  ASSERT_EQ(threads, expected->threads) << what;
  ASSERT_EQ(interleave, expected->interleave) << what;
  const int interleaved = interleave ? channels : 1;
  const std::size_t taken = threads == LargeTile::kThreads
                                ? SharedLayout<LargeTile, In, T>(interleaved, kw, kh).Bytes()
                                : SharedLayout<SmallTile, In, T>(interleaved, kw, kh).Bytes();
  ASSERT_LE(taken, bytes) << what;
}

template <class In>
void CheckTileChoices() {
  for (int kw : {1, 3, 8, 31, 63, 127, 128, 200, 297, 298, 400}) {
    for (int kh : {1, 5, 127, 129, 297, 300}) {
      for (int channels : {1, 3, 4, 8, 9}) {
        for (auto layout : {SeparableLayout::kPlanes, SeparableLayout::kChannelsLast}) {
          SeparableShape s = Square(kw, channels, layout);
          s.kh = kh;
          for (std::size_t bytes = 8 * kKiB; bytes <= 232 * kKiB; bytes += 4 * kKiB) {
            ExpectTileChoice<In>(s, bytes);
            if (testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST(SeparablePlan, TheChosenTileFitsTheSharedMemoryGiven) {
  CheckTileChoices<float>();
  CheckTileChoices<double>();
  CheckTileChoices<Float16>();
  CheckTileChoices<BFloat16>();
  CheckTileChoices<std::uint8_t>();
  EXPECT_TRUE(Fused(Square(kSeparableMaxTaps)));
}

// ---- Work items ----

// The work items of a launch over `g` (MakeGeometry with `interleave`, then PlanTiles or
// PlanRegisterStrips) with tile columns of `span` elements: counted tile columns fastest, then
// segments of rows, then planes, each item's plane and taps are those of its image (and channel),
// and its elements, a tile column of a row clipped at the row's end over the rows of its segment,
// lie at the CPU kernel's offsets (SeparableOffset): every output of the images once. Segments
// have at least `shortest` rows where there are several, there are several only where the strips
// give fewer than `per_worker` items to each of `resident` workers, and no more than make up
// `per_worker` items each.
void ExpectWorkWritesEveryOutputOnce(const SeparableShape& s, bool interleave, bool two_tables,
                                     const Geometry& g, int span, std::int64_t resident,
                                     int per_worker, std::int64_t shortest) {
  const std::string what = Describe(s) + (interleave ? ", interleaved" : ", a channel a row") +
                           (two_tables ? ", two tables" : ", one table") + ", " +
                           std::to_string(resident) + " resident";
  const bool interleaved = s.layout == SeparableLayout::kChannelsLast && interleave;
  const std::int64_t channels = s.channels;
  const std::int64_t in_row = interleaved ? channels : 1;  // channels a row
  ASSERT_EQ(g.planes, interleaved ? s.images : s.images * channels) << what;
  ASSERT_EQ(g.row_elements, s.width * in_row) << what;
  ASSERT_EQ(g.tile_columns, CeilDiv(g.row_elements, span)) << what;
  ASSERT_GE(static_cast<std::int64_t>(g.segments) * g.segment_rows, s.height) << what;
  ASSERT_LT(static_cast<std::int64_t>(g.segments - 1) * g.segment_rows, s.height) << what;
  ASSERT_EQ(g.work, g.planes * g.segments * g.tile_columns) << what;
  const std::int64_t strips = g.planes * g.tile_columns;
  EXPECT_LE(g.segments, CeilDiv(per_worker * resident, strips)) << what;
  if (g.segments > 1) {
    EXPECT_GE(g.segment_rows, shortest) << what;
    EXPECT_LT(strips, per_worker * resident) << what;
  }
  std::vector<unsigned char> written(static_cast<std::size_t>(s.Elements()), 0);
  std::int64_t count = 0;
  for (std::int64_t work = 0; work < g.work; ++work) {
    const WorkItem item = DecodeWork(work, g);
    const std::int64_t tile_column = work % g.tile_columns;
    const std::int64_t segment = work / g.tile_columns % g.segments;
    const std::int64_t plane = work / g.tile_columns / g.segments;
    const std::int64_t b = interleaved ? plane : plane / channels;
    const std::int64_t c = interleaved ? 0 : plane % channels;
    ASSERT_EQ(item.tile_column, tile_column) << what << ", item " << work;
    ASSERT_EQ(item.segment, segment) << what << ", item " << work;
    ASSERT_EQ(item.plane_offset, SeparableOffset(s, b, c, 0, 0)) << what << ", item " << work;
    const std::int64_t image = s.per_image_taps ? b : 0;
    ASSERT_EQ(item.row_taps, image * (two_tables ? s.kw : s.kw + s.kh))
        << what << ", item " << work;
    ASSERT_EQ(item.column_taps, two_tables ? image * s.kh : image * (s.kw + s.kh) + s.kw)
        << what << ", item " << work;
    const std::int64_t first_row = segment * g.segment_rows;
    const std::int64_t end_row = std::min<std::int64_t>(first_row + g.segment_rows, s.height);
    const std::int64_t first = tile_column * span;
    const std::int64_t end = std::min<std::int64_t>(first + span, g.row_elements);
    ASSERT_LT(first_row, end_row) << what << ", item " << work << ": no rows";
    for (std::int64_t y = first_row; y < end_row; ++y) {
      for (std::int64_t e = first; e < end; ++e) {
        const std::int64_t offset = item.plane_offset + y * g.row_stride + e * g.element_stride;
        ASSERT_EQ(offset, SeparableOffset(s, b, c + e % in_row, y, e / in_row))
            << what << ", item " << work << ", row " << y << ", element " << e;
        ASSERT_EQ(written[static_cast<std::size_t>(offset)]++, 0)
            << what << ", item " << work << ", row " << y << ", element " << e;
        ++count;
      }
    }
  }
  ASSERT_EQ(count, s.Elements()) << what;
}

// Shapes over heights and widths of one pixel to several tiles, channels around the interleaved
// limit, both layouts, filters of 1 to 127 taps and longer, shared and per-image taps, and a few
// grid sizes; f(shape, resident) for each.
template <class F>
void ForEachShape(F&& f) {
  const std::int64_t heights[] = {1, 2, 7, 33, 100};
  const std::int64_t widths[] = {1, 3, 31, 128, 129, 300};
  const std::int64_t taps[] = {1, 2, 3, 8, 31, 64, 127, 300};
  const std::int64_t residents[] = {1, 3, 64, 528};
  std::size_t pick = 0;
  for (std::int64_t height : heights) {
    for (std::int64_t width : widths) {
      for (std::int64_t channels : {1, 2, 3, 8, 9}) {
        for (auto layout : {SeparableLayout::kPlanes, SeparableLayout::kChannelsLast}) {
          SeparableShape s;
          s.images = 2;
          s.channels = channels;
          s.height = height;
          s.width = width;
          s.layout = layout;
          s.kw = taps[pick % 8];
          s.kh = taps[(pick / 8 + pick) % 8];
          s.per_image_taps = pick % 3 == 1;
          f(s, residents[pick % 4]);
          ++pick;
          if (testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// Every shape's tiles, in either tile, interleaved where the launcher may interleave and a channel
// a row, both tap layouts: every output once; and the geometry's staged rows the tile's layout,
// with vector loads and stores only where every row of x and y starts on their boundaries.
template <class Tile, class In>
void CheckTiles() {
  ForEachShape([](const SeparableShape& s, std::int64_t resident) {
    const bool can_interleave =
        s.layout == SeparableLayout::kChannelsLast && s.channels <= kMaxInterleavedChannels;
    for (bool interleave : {false, true}) {
      if (interleave && !can_interleave) continue;
      for (bool two_tables : {false, true}) {
        Geometry g = MakeGeometry(s, interleave, two_tables ? SeparateTaps(s) : JoinedTaps(s));
        PlanTiles<Tile>(&g, resident, At<In>(0), At<In>(0));
        const std::int64_t shortest = std::max<std::int64_t>(Tile::kRows, 4 * (s.kh - 1));
        ExpectWorkWritesEveryOutputOnce(s, interleave, two_tables, g, Tile::kWidth, resident, 2,
                                        shortest);
        if (testing::Test::HasFatalFailure()) return;
      }
      for (std::size_t misaligned : {0, 1}) {
        const In* x = At<In>(misaligned * sizeof(In));
        const In* y = At<In>(misaligned * 3 * sizeof(In));
        Geometry g = MakeGeometry(s, interleave, JoinedTaps(s));
        PlanTiles<Tile>(&g, resident, x, y);
        const SharedLayout<Tile, In, ComputeTypeOf<In>> layout(g.interleaved, g.kw, g.kh);
        EXPECT_EQ(g.staged_pitch, layout.staged_pitch) << Describe(s);
        EXPECT_EQ(g.staged_width, layout.staged_width) << Describe(s);
        EXPECT_EQ(g.map_entries, layout.map_entries) << Describe(s);
        // Every row's start, in bytes from x's and y's, for the loads' and stores' alignment.
        bool rows_on_words = true, rows_on_vectors = true;
        for (std::int64_t plane = 0; plane < g.planes; ++plane) {
          const std::int64_t image = plane / g.planes_per_image;
          const std::int64_t start =
              image * g.image_stride + (plane - image * g.planes_per_image) * g.sub_stride;
          for (std::int64_t row = 0; row < s.height; ++row) {
            const std::int64_t at = (start + row * g.row_stride) * sizeof(In);
            rows_on_words &= (reinterpret_cast<std::uintptr_t>(x) + at) % 4 == 0;
            rows_on_vectors &= (reinterpret_cast<std::uintptr_t>(y) + at) % (4 * sizeof(In)) == 0;
          }
        }
        const bool contiguous = g.element_stride == 1;
        if (g.vector_input) {
          EXPECT_TRUE(contiguous && rows_on_words) << Describe(s);
        }
        if (g.vector_output) {
          EXPECT_TRUE(contiguous && rows_on_vectors) << Describe(s);
        }
        if (misaligned == 0 && contiguous && g.row_elements % 4 == 0) {
          EXPECT_TRUE(g.vector_input && g.vector_output) << Describe(s);
        }
      }
    }
  });
}

TEST(SeparablePlan, TilesAndSegmentsWriteEveryOutputOnce) {
  CheckTiles<LargeTile, float>();
  CheckTiles<SmallTile, float>();
  CheckTiles<LargeTile, std::uint8_t>();
  CheckTiles<SmallTile, Float16>();
  CheckTiles<LargeTile, double>();
}

// ---- The two passes ----

// A warp of the row pass stages kRowStaged samples for a chunk of up to kRowChunkTaps taps: lane
// l's outputs l * R + r read samples l * R + r + j, and its ring loads up to l * R + count +
// RingSegments * K - 1, within them; lanes R apart read distinct banks.
TEST(SeparablePlan, TwoPassRowStagingHoldsWhatSlideReads) {
  constexpr int R = kRowPassOutputs, S = RingSegments<kRowPassOutputs>();
  EXPECT_EQ(kRowSegment, 32 * R);
  EXPECT_LT(31 * R + kRowChunkTaps + S * kTapsPerRingSegment - 1, kRowStaged);
  EXPECT_LE(kRowSegment + kRowChunkTaps - 1, kRowStaged);
  EXPECT_EQ(std::gcd(R, 32), 1);
}

// ---- The register kernel ----

// For k of 3 to kRegisterMaxTaps and one or three channels: the halo lanes at either end of a warp
// hold the (k / 2) * channels elements beside the outer vectors, and are the fewest that do; some
// lanes compute, RegisterSpan elements of them; a byte lane outside the row finds the elements it
// folds to within the 16 bytes at the row's end. A lane's vector is 16 bytes of float32, 8 of
// uint8, float16 and bfloat16, and its copies run 64 bytes ahead.
template <class In>
void ExpectRegisterHalo() {
  constexpr int V = kRegisterVector<In>;
  EXPECT_EQ(V * sizeof(In), sizeof(In) == 4 ? 16u : 8u);
  EXPECT_EQ(kRegisterStages<In> * V * sizeof(In), 64u);
  for (int k = 3; k <= kRegisterMaxTaps; k += 2) {
    for (int channels : {1, 3}) {
      const int halo = (k / 2) * channels;
      const int lanes = RegisterHaloLanes<In>(k, channels);
      EXPECT_GE(lanes * V, halo) << "k " << k << ", " << channels << " channels";
      EXPECT_LT((lanes - 1) * V, halo) << "k " << k << ", " << channels << " channels";
      EXPECT_LT(lanes, 16) << "k " << k << ", " << channels << " channels";
      EXPECT_EQ(RegisterSpan<In>(k, channels), (32 - 2 * lanes) * V);
      if (sizeof(In) == 1) {
        EXPECT_LE((k / 2 + 1) * channels, 2 * V) << "k " << k << ", " << channels << " channels";
      }
    }
  }
}

TEST(SeparablePlan, RegisterHaloLanesHoldTheHalo) {
  ExpectRegisterHalo<float>();
  ExpectRegisterHalo<Float16>();
  ExpectRegisterHalo<BFloat16>();
  ExpectRegisterHalo<std::uint8_t>();
}

// The register kernel takes square filters of 3, 5, 7 or 9 taps on rows of whole vectors, x and y
// aligned to them, of 4-byte elements or narrower: planes and one channel as 1, RGB channels-last
// as 3, nothing else.
template <class In>
void ExpectRegisterChannels() {
  constexpr int V = kRegisterVector<In>;
  const In* aligned = At<In>(0);
  const In* misaligned = At<In>(sizeof(In));
  for (int kw = 1; kw <= 11; ++kw) {
    for (int kh : {kw, kw + 2}) {
      for (std::int64_t width : {std::int64_t{V}, std::int64_t{7 * V}, std::int64_t{V + 1}}) {
        for (int channels : {1, 2, 3, 4}) {
          for (auto layout : {SeparableLayout::kPlanes, SeparableLayout::kChannelsLast}) {
            SeparableShape s = Square(kw, channels, layout);
            s.kh = kh;
            s.width = width;
            const bool short_square = kw == kh && kw % 2 == 1 && kw >= 3 && kw <= 9;
            const int expected = !short_square || width % V != 0 ? 0
                                 : layout == SeparableLayout::kPlanes || channels == 1
                                     ? 1
                                     : (channels == 3 ? 3 : 0);
            EXPECT_EQ(RegisterChannels(s, aligned, aligned), expected) << Describe(s);
            EXPECT_EQ(RegisterChannels(s, misaligned, aligned), 0) << Describe(s);
            EXPECT_EQ(RegisterChannels(s, aligned, misaligned), 0) << Describe(s);
          }
        }
      }
    }
  }
}

TEST(SeparablePlan, RegisterKernelTakesShortSquareFiltersOnAlignedRows) {
  ExpectRegisterChannels<float>();
  ExpectRegisterChannels<Float16>();
  ExpectRegisterChannels<BFloat16>();
  ExpectRegisterChannels<std::uint8_t>();
  EXPECT_EQ(RegisterChannels(Square(3), At<double>(0), At<double>(0)), 0);
}

// Every shape the register kernel takes: its strips (RegisterSpan elements, the halo lanes'
// excepted) over segments of rows write every output once.
template <class In>
void CheckRegisterStrips() {
  constexpr int V = kRegisterVector<In>;
  std::size_t pick = 0;
  for (int k = 3; k <= kRegisterMaxTaps; k += 2) {
    for (std::int64_t height : {1, 5, 40, 300}) {
      for (std::int64_t width : {V, 2 * V, 31 * V, 64 * V}) {
        for (auto [channels, layout] :
             {std::pair{1, SeparableLayout::kPlanes}, std::pair{3, SeparableLayout::kPlanes},
              std::pair{1, SeparableLayout::kChannelsLast},
              std::pair{3, SeparableLayout::kChannelsLast}}) {
          SeparableShape s = Square(k, channels, layout);
          s.height = height;
          s.width = width;
          s.per_image_taps = pick % 2 == 1;
          const std::int64_t resident = std::int64_t{1} << (pick % 4 * 3);  // 1 to 512 warps
          ++pick;
          const In* data = At<In>(0);
          ASSERT_GT(RegisterChannels(s, data, data), 0) << Describe(s);
          const bool two_tables = pick % 3 == 0;
          Geometry g =
              MakeGeometry(s, /*interleave=*/true, two_tables ? SeparateTaps(s) : JoinedTaps(s));
          PlanRegisterStrips<In>(&g, resident);
          ExpectWorkWritesEveryOutputOnce(s, true, two_tables, g,
                                          RegisterSpan<In>(k, g.interleaved), resident, 8,
                                          std::max<std::int64_t>(16, 4 * (k - 1)));
          if (testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(SeparablePlan, RegisterStripsWriteEveryOutputOnce) {
  CheckRegisterStrips<float>();
  CheckRegisterStrips<Float16>();
  CheckRegisterStrips<std::uint8_t>();
}

}  // namespace
}  // namespace ops
}  // namespace constmem

// SPDX-License-Identifier: Apache-2.0
// Host-side logic of the core, runnable without a GPU: status, strategy, slot bookkeeping,
// counters, op descriptions with one table and with several, FastDivisor, and Frobulate's CPU
// arithmetic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "constmem/host_device.hpp"
#include "constmem/op_description.hpp"
#include "constmem/slot_planner.hpp"
#include "constmem/stats.hpp"
#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/table.hpp"
#include "frobulate/frobulate_functor.h"

namespace constmem {
namespace {

TEST(Status, CarriesCodeMessageAndCudaError) {
  EXPECT_TRUE(Status::Ok().ok());
  const Status status(StatusCode::kInternal, "copy failed",
                      "cudaErrorInvalidValue: invalid argument");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.ToString(), "INTERNAL: copy failed (cudaErrorInvalidValue: invalid argument)");
  EXPECT_EQ(InvalidArgument("bad").code(), StatusCode::kInvalidArgument);
}

Status FailsThenNeverReached(int* reached) {
  CONSTMEM_RETURN_IF_ERROR(InvalidArgument("first"));
  *reached = 1;
  return Status::Ok();
}

TEST(Status, ReturnIfErrorStopsAtTheFirstFailure) {
  int reached = 0;
  EXPECT_EQ(FailsThenNeverReached(&reached).message(), "first");
  EXPECT_EQ(reached, 0);
}

TEST(Strategy, HostTablesUpToTheByValueLimitGoByValue) {
  EXPECT_EQ(ChoosePlacement(400, TableLocation::kHost), Placement::kByValue);
  EXPECT_EQ(ChoosePlacement(kDefaultByValueBytes, TableLocation::kHost), Placement::kByValue);
  EXPECT_EQ(ChoosePlacement(kDefaultByValueBytes + 4, TableLocation::kHost),
            Placement::kConstantBank);
}

TEST(Strategy, DeviceTablesAreNeverPassedByValue) {
  EXPECT_EQ(ChoosePlacement(4, TableLocation::kDevice), Placement::kConstantBank);
  EXPECT_EQ(ChoosePlacement(kConstantMemoryBytes, TableLocation::kDevice),
            Placement::kConstantBank);
}

TEST(Strategy, SmallDeviceTablesCanBeReadInPlace) {
  StrategyLimits limits;
  limits.device_in_place_bytes = 4096;
  EXPECT_EQ(ChoosePlacement(4096, TableLocation::kDevice, limits), Placement::kGlobalMemory);
  EXPECT_EQ(ChoosePlacement(4100, TableLocation::kDevice, limits), Placement::kConstantBank);
  EXPECT_EQ(ChoosePlacement(400, TableLocation::kHost, limits), Placement::kByValue);
}

TEST(Strategy, SmallLaunchesCopyNoTableTheyCanAvoid) {
  const StrategyLimits limits;
  const auto host = TableLocation::kHost, device = TableLocation::kDevice;
  const auto uniform = TableAccess::kUniform, divergent = TableAccess::kDivergent;
  const std::int64_t small = kSmallLaunchElements, large = kSmallLaunchElements + 1;
  struct Case {
    std::size_t bytes;
    TableLocation location;
    TableAccess access;
    std::int64_t launch_elements;
    Placement expected;
  };
  const Case cases[] = {
      // A device table bound for the bank is read in place by a small launch.
      {400, device, uniform, small, Placement::kGlobalMemory},
      {400, device, uniform, 1, Placement::kGlobalMemory},
      {400, device, uniform, large, Placement::kConstantBank},
      {400, device, uniform, kUnknownLaunchElements, Placement::kConstantBank},
      // A host table: by value up to the by-value size, whatever the launch or the reads.
      {400, host, uniform, small, Placement::kByValue},
      {kDefaultByValueBytes + 4, host, uniform, 1, Placement::kConstantBank},
      // Read at divergent indices by a larger launch, it still travels by value and each block
      // stages it into shared memory: no copy to the device.
      {400, host, divergent, small, Placement::kByValue},
      {400, host, divergent, large, Placement::kSharedMemory},
      {kDefaultByValueBytes, host, divergent, large, Placement::kSharedMemory},
      {2048, host, divergent, small, Placement::kByValue},
      {kDefaultByValueBytes + 4, host, divergent, 1, Placement::kSharedMemory},
      {kDefaultByValueBytes + 4, host, divergent, large, Placement::kSharedMemory},
      // Divergent reads of a device table are not the bank's: unchanged by the launch.
      {2048, device, divergent, 1, Placement::kSharedMemory},
      // Past the bank: global memory for any launch.
      {kConstantMemoryBytes + 1, host, uniform, 1, Placement::kGlobalMemory},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ChoosePlacement(c.bytes, c.location, limits, c.access, c.launch_elements), c.expected)
        << c.bytes << " bytes, " << (c.location == host ? "host" : "device") << ", "
        << (c.access == uniform ? "uniform" : "divergent") << ", " << c.launch_elements
        << " elements";
  }
}

TEST(Strategy, AnOpMovesItsSmallLaunchBoundary) {
  StrategyLimits limits;
  limits.small_launch_elements = std::int64_t{1} << 23;
  const auto device = TableLocation::kDevice;
  EXPECT_EQ(ChoosePlacement(24, device, limits, TableAccess::kUniform, kSmallLaunchElements + 1),
            Placement::kGlobalMemory);
  EXPECT_EQ(ChoosePlacement(24, device, limits, TableAccess::kUniform, std::int64_t{1} << 23),
            Placement::kGlobalMemory);
  EXPECT_EQ(ChoosePlacement(24, device, limits, TableAccess::kUniform, (std::int64_t{1} << 23) + 1),
            Placement::kConstantBank);
}

TEST(Strategy, TablesLargerThanTheBankGoToGlobalMemory) {
  EXPECT_EQ(ChoosePlacement(kConstantMemoryBytes + 1, TableLocation::kDevice),
            Placement::kGlobalMemory);
  EXPECT_EQ(ChoosePlacement(kConstantMemoryBytes + 1, TableLocation::kHost),
            Placement::kGlobalMemory);
  StrategyLimits small_bank;
  small_bank.constant_bank_bytes = 1024;
  EXPECT_EQ(ChoosePlacement(2048, TableLocation::kDevice, small_bank), Placement::kGlobalMemory);
  EXPECT_STREQ(PlacementName(Placement::kGlobalMemory), "global_memory");
}

TEST(Strategy, DivergentReadsGoToSharedOrGlobalMemoryFromAnySource) {
  for (TableLocation location : {TableLocation::kHost, TableLocation::kDevice}) {
    // A host table that fits by value is staged from its parameter at any size: no copy.
    const Placement small_table =
        location == TableLocation::kHost ? Placement::kSharedMemory : Placement::kGlobalMemory;
    EXPECT_EQ(ChoosePlacement(8, location, StrategyLimits(), TableAccess::kDivergent), small_table);
    EXPECT_EQ(ChoosePlacement(1024, location, StrategyLimits(), TableAccess::kDivergent),
              small_table);
    EXPECT_EQ(ChoosePlacement(1032, location, StrategyLimits(), TableAccess::kDivergent),
              Placement::kSharedMemory);
    EXPECT_EQ(ChoosePlacement(64 * 1024, location, StrategyLimits(), TableAccess::kDivergent),
              Placement::kSharedMemory);
    EXPECT_EQ(ChoosePlacement(64 * 1024 + 8, location, StrategyLimits(), TableAccess::kDivergent),
              Placement::kGlobalMemory);
  }
  StrategyLimits tiny_in_global;
  tiny_in_global.divergent_global_bytes = 128;
  for (TableLocation location : {TableLocation::kHost, TableLocation::kDevice}) {
    EXPECT_EQ(
        ChoosePlacement(128, location, tiny_in_global, TableAccess::kDivergent),
        location == TableLocation::kHost ? Placement::kSharedMemory : Placement::kGlobalMemory);
    EXPECT_EQ(ChoosePlacement(132, location, tiny_in_global, TableAccess::kDivergent),
              Placement::kSharedMemory);
  }
  // An op that stages nothing: a small host table is copied to the device in a large launch.
  StrategyLimits no_staging;
  no_staging.shared_memory_bytes = 0;
  EXPECT_EQ(ChoosePlacement(100, TableLocation::kHost, no_staging, TableAccess::kDivergent),
            Placement::kGlobalMemory);
  EXPECT_EQ(ChoosePlacement(100, TableLocation::kHost, no_staging, TableAccess::kDivergent,
                            kSmallLaunchElements),
            Placement::kByValue);
  // Uniform reads keep the constant-memory rules.
  EXPECT_EQ(ChoosePlacement(8, TableLocation::kHost, StrategyLimits(), TableAccess::kUniform),
            Placement::kByValue);
  EXPECT_STREQ(PlacementName(Placement::kSharedMemory), "shared_memory");
}

TEST(Strategy, PerBlockTablesAreNeverCopiedIntoABankNorStaged) {
  const auto host = SourceKind::kPageableHost, device = SourceKind::kDevice;
  const std::int64_t small = kSmallLaunchElements, large = kSmallLaunchElements + 1;
  struct Case {
    std::int64_t entries;
    SourceKind source;
    Placement expected;
  };
  // float32 entries: 64 bytes, 4 KiB (the by-value size), 64 KiB (the bank), 4 MiB.
  const Case cases[] = {
      {16, host, Placement::kByValue},
      {1024, host, Placement::kByValue},
      {16384, host, Placement::kGlobalMemory},
      {std::int64_t{1} << 20, host, Placement::kGlobalMemory},
      {16, device, Placement::kGlobalMemory},
      {1024, device, Placement::kGlobalMemory},
      {16384, device, Placement::kGlobalMemory},
      {std::int64_t{1} << 20, device, Placement::kGlobalMemory},
  };
  for (const Case& c : cases) {
    for (const std::int64_t launch : {std::int64_t{1}, small, large, kUnknownLaunchElements}) {
      EXPECT_EQ(ChoosePlacementFor<float>(c.entries, c.source, StrategyLimits(),
                                          TableAccess::kPerBlock, launch),
                c.expected)
          << c.entries << " entries, " << (c.source == host ? "host" : "device") << ", " << launch
          << " elements";
    }
  }
  // Where the other patterns copy into the bank or stage, per-block tables stay in global memory.
  EXPECT_EQ(
      ChoosePlacementFor<float>(16384, device, StrategyLimits(), TableAccess::kUniform, large),
      Placement::kConstantBank);
  EXPECT_EQ(
      ChoosePlacementFor<float>(16384, device, StrategyLimits(), TableAccess::kDivergent, large),
      Placement::kSharedMemory);
  EXPECT_EQ(ChoosePlacementFor<float>(1025, host, StrategyLimits(), TableAccess::kUniform, small),
            Placement::kConstantBank);
  EXPECT_EQ(ChoosePlacementFor<float>(1025, host, StrategyLimits(), TableAccess::kPerBlock, small),
            Placement::kGlobalMemory);
  // Only the by-value size moves the choice: the bank, staging and in-place limits do not.
  StrategyLimits generous;  // limits under which the other patterns copy or stage every table
  generous.constant_bank_bytes = 1 << 20;
  generous.shared_memory_bytes = 1 << 20;
  generous.divergent_global_bytes = 0;
  generous.small_launch_elements = 0;
  EXPECT_EQ(ChoosePlacementFor<float>(64, device, generous, TableAccess::kPerBlock, large),
            Placement::kGlobalMemory);
  EXPECT_EQ(ChoosePlacementFor<float>(64, host, generous, TableAccess::kPerBlock, large),
            Placement::kByValue);
  generous.by_value_bytes = 0;
  EXPECT_EQ(ChoosePlacementFor<float>(64, host, generous, TableAccess::kPerBlock, large),
            Placement::kGlobalMemory);
  StrategyLimits wide_parameters;
  wide_parameters.by_value_bytes = kMaxKernelParamBytes;
  EXPECT_EQ(ChoosePlacementFor<double>(2048, SourceKind::kPinnedHost, wide_parameters,
                                       TableAccess::kPerBlock),
            Placement::kByValue);
  EXPECT_EQ(ChoosePlacementFor<double>(4096, SourceKind::kPinnedHost, wide_parameters,
                                       TableAccess::kPerBlock),
            Placement::kGlobalMemory);
}

TEST(SlotPlanner, CountsSlotsAndRejectsWhatDoesNotFit) {
  SlotPlanner planner(4, 256);
  EXPECT_EQ(planner.SlotsNeeded(0), 0);
  EXPECT_EQ(planner.SlotsNeeded(1), 1);
  EXPECT_EQ(planner.SlotsNeeded(256), 1);
  EXPECT_EQ(planner.SlotsNeeded(257), 2);
  EXPECT_EQ(planner.SlotsNeeded(1024), 4);
  EXPECT_EQ(planner.SlotsNeeded(1025), 0);
}

TEST(Strategy, ByValueSizeCountsPadding) {
  // The largest by-value tables: 4 + 8,190 * 4 bytes fits; doubles start at offset 8, so 4,095
  // of them make 32,768 bytes, past the 32,764-byte limit, although 4 + 4,095 * 8 would not be.
  static_assert(ByValueTableBytes<float>(8190) == kMaxKernelParamBytes, "");
  static_assert(ByValueTableBytes<double>(4095) == 32768, "");
  static_assert(ByValueTableBytes<double>(4095) > kMaxKernelParamBytes, "");
  static_assert(ByValueTableBytes<double>(4094) <= kMaxKernelParamBytes, "");
  struct Probe {
    int size;
    double values[3];
  };
  EXPECT_EQ(ByValueTableBytes<double>(3), sizeof(Probe));
}

TEST(SlotPlanner, HandsOutDifferentSlotsRoundRobin) {
  SlotPlanner planner(4, 256);
  std::vector<int> starts;
  for (int i = 0; i < 4; ++i) {
    const int start = planner.FindFreeRun(1);
    ASSERT_GE(start, 0);
    planner.Lease(start, 1);
    starts.push_back(start);
  }
  EXPECT_EQ(starts, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(planner.FindFreeRun(1), -1) << "every slot is leased";
  planner.Unlease(2, 1);
  EXPECT_EQ(planner.FindFreeRun(1), 2);
}

TEST(SlotPlanner, MultiSlotRunsNeedContiguousFreeSlots) {
  SlotPlanner planner(4, 256);
  planner.Lease(1, 1);
  EXPECT_EQ(planner.FindFreeRun(2), 2) << "slots 2-3 are the only free pair";
  planner.Lease(2, 2);
  EXPECT_EQ(planner.FindFreeRun(2), -1);
  EXPECT_EQ(planner.FindFreeRun(1), 0);
}

TEST(SlotPlanner, RemembersHostContentToSkipUnchangedUploads) {
  SlotPlanner planner(4, 16);
  const std::vector<std::int32_t> table = {1, 2, 3};
  std::vector<std::int32_t> other = table;
  other[2] = 4;
  EXPECT_EQ(planner.FindContent(table.data(), 12), -1);
  planner.RecordContent(1, 1, table.data(), 12);
  EXPECT_EQ(planner.FindContent(table.data(), 12), 1);
  EXPECT_TRUE(planner.Holds(1, table.data(), 12));
  EXPECT_FALSE(planner.Holds(1, other.data(), 12)) << "same length, other content";
  EXPECT_FALSE(planner.Holds(1, table.data(), 8)) << "a prefix is another table";
}

TEST(SlotPlanner, OverwritingPartOfARunForgetsItsContent) {
  SlotPlanner planner(4, 16);
  std::vector<std::int32_t> wide(8, 7);  // 32 bytes: two slots
  planner.RecordContent(0, 2, wide.data(), 32);
  EXPECT_TRUE(planner.Holds(0, wide.data(), 32));
  planner.RecordContent(1, 1, nullptr, 16);  // a device copy into the run's second slot
  EXPECT_FALSE(planner.Holds(0, wide.data(), 32));
  planner.RecordContent(0, 2, wide.data(), 32);
  planner.RecordContent(0, 1, nullptr, 4);
  EXPECT_EQ(planner.FindContent(wide.data(), 32), -1);
}

TEST(SlotPlanner, AThreadNeverWaitsForItsOwnLease) {
  SlotPlanner planner(2, 16);
  planner.Lease(0, 1, /*owner=*/1);
  EXPECT_TRUE(planner.CanBecomeFree(1, 1)) << "slot 1 is free";
  planner.Lease(1, 1, /*owner=*/2);
  EXPECT_TRUE(planner.CanBecomeFree(1, 1)) << "owner 2 will release slot 1";
  EXPECT_FALSE(planner.CanBecomeFree(2, 1)) << "a two-slot run would need owner 1's own slot";
  planner.Unlease(1, 1);
  planner.Lease(1, 1, /*owner=*/1);
  EXPECT_FALSE(planner.CanBecomeFree(1, 1)) << "owner 1 holds every slot";
  EXPECT_TRUE(planner.CanBecomeFree(1, 2));
}

TEST(SlotPlanner, QuarantinedSlotsAreNeverHandedOut) {
  SlotPlanner planner(2, 16);
  const std::vector<std::int32_t> table = {5};
  planner.RecordContent(0, 1, table.data(), 4);
  planner.Quarantine(0, 1);
  EXPECT_EQ(planner.FindContent(table.data(), 4), -1) << "its content is forgotten";
  EXPECT_EQ(planner.FindFreeRun(1), 1);
  EXPECT_EQ(planner.FindFreeRun(2), -1);
  EXPECT_FALSE(planner.CanBecomeFree(2, 7)) << "waiting cannot help: no release will come";
  EXPECT_EQ(planner.ClearQuarantine(), 1);
  EXPECT_EQ(planner.FindFreeRun(2), 0);
}

TEST(Counters, CountAndName) {
  const std::int64_t before = CounterValue(Counter::kUploadSkipped);
  Count(Counter::kUploadSkipped);
  Count(Counter::kUploadSkipped, 2);
  EXPECT_EQ(CounterValue(Counter::kUploadSkipped), before + 3);
  EXPECT_STREQ(CounterName(Counter::kStagingReleasedEarly), "staging_released_early");
}

// y[r, i] = x[r, i] * scale[r] + bias[r % bias_size]: two tables of their own sizes.
struct ScaleBiasOp : OpDescription {
  static constexpr OpNames kNames{"test", "ScaleBias", "scale_bias", "x", "scale"};
  static constexpr TableSpec kTables[] = {{"scale", 1, 64}, {"bias", 1, 8}};
  static constexpr int kTableCount = 2;
  struct Shape {
    std::int64_t rows = 0;
    std::int64_t row_length = 0;
  };
  static Status Output(const Dims& x, const Params&, const TableSizes& sizes, Shape* shape,
                       Dims* y) {
    *y = x;
    shape->rows = RowCount(x);
    shape->row_length = x.back();
    if (sizes[0] != shape->rows) return InvalidArgument("scale must have one entry per row");
    return Status::Ok();
  }
  template <class T, class Shard>
  static void RunCpu(const Params&, const Shape& shape, const T* x, T* y, const Tables<T>& tables,
                     const Shard& shard) {
    const TableView<T> scale = tables[0];
    const TableView<T> bias = tables[1];
    shard(shape.rows * shape.row_length, 2, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        const std::int64_t row = i / shape.row_length;
        y[i] = x[i] * scale.values[row] + bias.values[row % bias.size];
      }
    });
  }
};

// Several tables and the elementwise defaults: y has x's shape.
struct GainOffsetOp : OpDescription {
  static constexpr OpNames kNames{"test", "GainOffset", "gain_offset", "x", "gain"};
  static constexpr TableSpec kTables[] = {{"gain", 1, 1}, {"offset", 1, 1}};
  static constexpr int kTableCount = 2;
};

TEST(OpDescription, SeveralTablesKeepTheElementwiseOutput) {
  TableSizes sizes;
  sizes.count = 2;
  sizes.size[0] = 1;
  sizes.size[1] = 1;
  GainOffsetOp::Shape shape;
  Dims y;
  ASSERT_TRUE(OutputOf<GainOffsetOp>({4, 5}, {}, sizes, &shape, &y).ok());
  EXPECT_EQ(y, (Dims{4, 5}));
  EXPECT_EQ(shape.elements, 20);
  // A table of one size is worded so.
  sizes.size[1] = 2;
  EXPECT_EQ(detail::CheckCallOf<GainOffsetOp>("float32", {4, 5}, sizes, nullptr, &y).message(),
            "offset must have exactly 1 entry; got 2");
}

TEST(OpDescription, SeveralTablesAreCheckedRunAndListedEachUnderItsName) {
  static_assert(TableCountOf<ScaleBiasOp>() == 2, "two tables");
  EXPECT_STREQ(TableSpecOf<ScaleBiasOp>(1).name, "bias");

  TableSizes sizes;
  sizes.count = 2;
  sizes.size[0] = 2;
  sizes.size[1] = 9;
  Dims y;
  Status status = detail::CheckCallOf<ScaleBiasOp>("float32", {2, 3}, sizes, nullptr, &y);
  EXPECT_EQ(status.message(), "bias must have 1 to 8 entries; got 9");
  sizes.size[1] = 2;
  EXPECT_TRUE(detail::CheckCallOf<ScaleBiasOp>("float64", {2, 3}, sizes, nullptr, &y).ok());
  EXPECT_EQ(y, (Dims{2, 3}));
  sizes.count = 1;
  EXPECT_EQ(detail::CheckCallOf<ScaleBiasOp>("float32", {2, 3}, sizes, nullptr, &y).message(),
            "scale_bias takes 2 tables; got 1");

  const std::vector<double> x{1, 2, 3, 4, 5, 6}, scale{10, 100}, bias{0.5, -0.5};
  Tables<double> tables;
  tables.Set(0, TableView<double>{scale.data(), 2, SourceKind::kPageableHost});
  tables.Set(1, TableView<double>{bias.data(), 2, SourceKind::kPageableHost});
  ScaleBiasOp::Params params;
  ScaleBiasOp::Shape shape;
  ASSERT_TRUE(OutputOf<ScaleBiasOp>({2, 3}, params, tables.Sizes(), &shape, &y).ok());
  std::vector<double> out(6);
  RunCpuOf<ScaleBiasOp>(params, shape, x.data(), out.data(), tables, SerialShard{});
  EXPECT_EQ(out, (std::vector<double>{10.5, 20.5, 30.5, 399.5, 499.5, 599.5}));

  const std::string registry = OpRegistryJson<ScaleBiasOp>();
  EXPECT_NE(registry.find(R"("tables":[{"name":"scale","min_size":1,"max_size":64,"int32":false},)"
                          R"({"name":"bias","min_size":1,"max_size":8,"int32":false}])"),
            std::string::npos)
      << registry;
}

// An op with two outputs: each element's sign (int8, its own fixed dtype) and |x| * scale in the
// data's dtype, and the largest |x| (the data's dtype, a vector of one).
struct SignMagnitudeOp : OpDescription {
  static constexpr OpNames kNames{"test", "SignMagnitude", "sign_magnitude", "x", "scale"};
  static constexpr TableRule kTable{1, 1};
  static constexpr bool kElementwise = false;
  static constexpr OutputSpec kOutputs[] = {
      {"sign", {OutputRule::kFixed, {DataType::kInt8}}},
      {"magnitude", {}},
      {"largest", {}},
  };
  static constexpr int kOutputCount = 3;
  static Status Output(const Dims& x, const Params&, std::int64_t, Shape* shape, Dims* y) {
    if (x.empty()) return InvalidArgument("x must have rank 1 or more; got a scalar");
    y[0] = y[1] = x;
    y[2] = {1};
    shape->elements = ElementCount(x);
    return Status::Ok();
  }
  template <class T, class Shard>
  static void RunCpu(const Params&, const Shape& shape, const T* x, const Outputs& y,
                     const T* scale, std::int64_t, const Shard& shard) {
    std::int8_t* sign = y.As<std::int8_t>(0);
    T* magnitude = y.As<T>(1);
    T* largest = y.As<T>(2);
    largest[0] = 0;
    shard(shape.elements, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        sign[i] = static_cast<std::int8_t>((x[i] > 0) - (x[i] < 0));
        magnitude[i] = (x[i] < 0 ? -x[i] : x[i]) * scale[0];
        largest[0] = std::max(largest[0], x[i] < 0 ? -x[i] : x[i]);
      }
    });
  }
};

TEST(OpDescription, SeveralOutputsEachWithItsDtypeAndShape) {
  static_assert(OutputCountOf<SignMagnitudeOp>() == 3 && OutputCountOf<ScaleBiasOp>() == 1, "");
  EXPECT_STREQ(OutputSpecOf<SignMagnitudeOp>(1).name, "magnitude");
  EXPECT_STREQ(OutputSpecOf<ScaleBiasOp>(0).name, "y");
  EXPECT_EQ(OutputDataTypeOf<SignMagnitudeOp>(0, DataType::kFloat64, nullptr), DataType::kInt8);
  EXPECT_EQ(OutputDataTypeOf<SignMagnitudeOp>(1, DataType::kFloat64, nullptr), DataType::kFloat64);
  EXPECT_EQ(OutputName<SignMagnitudeOp>(2), "sign_magnitude's largest");
  EXPECT_EQ(OutputName<ScaleBiasOp>(0), "scale_bias's result");

  OutputDims y;
  EXPECT_TRUE(
      detail::CheckCallOf<SignMagnitudeOp>("float32", {2, 3}, SizesOf(1), nullptr, y.data()).ok());
  EXPECT_EQ(y[0], (Dims{2, 3}));
  EXPECT_EQ(y[2], (Dims{1}));
  EXPECT_EQ(
      detail::CheckCallOf<SignMagnitudeOp>("float32", {}, SizesOf(1), nullptr, y.data()).message(),
      "x must have rank 1 or more; got a scalar");

  const std::vector<float> x{-2, 0, 3, -5}, scale{0.5f};
  std::vector<std::int8_t> sign(4);
  std::vector<float> magnitude(4), largest(1);
  Outputs outputs;
  outputs.Set(0, sign.data(), DataType::kInt8);
  outputs.Set(1, magnitude.data(), DataType::kFloat32);
  outputs.Set(2, largest.data(), DataType::kFloat32);
  EXPECT_EQ(outputs.count(), 3);
  Tables<float> tables;
  tables.Set(0, TableView<float>{scale.data(), 1, SourceKind::kPageableHost});
  SignMagnitudeOp::Params params;
  SignMagnitudeOp::Shape shape;
  ASSERT_TRUE(OutputOf<SignMagnitudeOp>({4}, params, tables.Sizes(), &shape, y.data()).ok());
  RunCpuOf<SignMagnitudeOp, float>(params, shape, x.data(), outputs, tables, SerialShard{});
  EXPECT_EQ(sign, (std::vector<std::int8_t>{-1, 0, 1, -1}));
  EXPECT_EQ(magnitude, (std::vector<float>{1, 0, 1.5f, 2.5f}));
  EXPECT_EQ(largest[0], 5.0f);

  const std::string registry = OpRegistryJson<SignMagnitudeOp>();
  EXPECT_NE(registry.find(R"("outputs":[{"name":"sign","rule":"fixed","dtypes":["int8"]},)"
                          R"({"name":"magnitude","rule":"data","dtypes":[]},)"
                          R"({"name":"largest","rule":"data","dtypes":[]}])"),
            std::string::npos)
      << registry;
  EXPECT_NE(registry.find(R"("output":{"rule":"fixed","dtypes":["int8"]})"), std::string::npos);

  // The exported check gives each output's dims, one after another.
  const long long dims[] = {2, 3};
  const long long sizes[] = {1};
  long long y_dims[8];
  int ranks[3];
  int count = 3;
  char error[128] = "";
  EXPECT_EQ(detail::ExportedCheckOutputs<SignMagnitudeOp>("sign_magnitude", "float64", dims, 2,
                                                          sizes, 1, nullptr, nullptr, nullptr,
                                                          y_dims, 8, ranks, &count, error, 128),
            0)
      << error;
  EXPECT_EQ(count, 3);
  EXPECT_EQ(std::vector<int>(ranks, ranks + 3), (std::vector<int>{2, 2, 1}));
  EXPECT_EQ(std::vector<long long>(y_dims, y_dims + 5), (std::vector<long long>{2, 3, 2, 3, 1}));
  EXPECT_EQ(detail::ExportedCheckOutputs<SignMagnitudeOp>("sign_magnitude", "float64", dims, 2,
                                                          sizes, 1, nullptr, nullptr, nullptr,
                                                          y_dims, 4, ranks, &count, error, 128),
            1);
  EXPECT_STREQ(error, "the outputs have too many dimensions");
}

TEST(FrobulateFunctor, AddsLeftToRightInTheDataType) {
  // 2^24 + 1 + 1 in float: each +1 rounds away, so left-to-right gives 2^24, not 2^24 + 2.
  const std::int32_t table[] = {1, 1};
  const float start = 16777216.0f;
  EXPECT_EQ(ops::FrobulateElement(start, table, 2), 16777216.0f);
  EXPECT_EQ(ops::FrobulateElement(static_cast<double>(start), table, 2), 16777218.0);
}

TEST(FrobulateFunctor, MatchesAFloat64ReferenceOnSmallIntegers) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int32_t> entry(-50, 50);
  std::vector<std::int32_t> table(100);
  for (auto& t : table) t = entry(rng);
  std::vector<float> data(1000), out(1000);
  for (auto& d : data) d = static_cast<float>(entry(rng)) * 0.5f;
  ops::FrobulateRange(data.data(), out.data(), 0, 1000, table.data(), 100);
  for (int i = 0; i < 1000; ++i) {
    double reference = data[i];
    for (std::int32_t t : table) reference += t;
    EXPECT_EQ(static_cast<double>(out[i]), reference) << i;  // exact: small halves and integers
  }
}

TEST(FastDivisor, DividesEvery32BitNumberAsTheDivisionDoes) {
  std::mt19937_64 rng(7);
  std::vector<std::uint32_t> divisors;
  for (std::uint32_t d = 1; d <= 1100; ++d) divisors.push_back(d);
  for (int k = 11; k < 32; ++k) {
    for (std::uint32_t d : {(1u << k) - 1, 1u << k, (1u << k) + 1}) divisors.push_back(d);
  }
  divisors.push_back(0xffffffffu);
  for (int i = 0; i < 200; ++i) divisors.push_back(static_cast<std::uint32_t>(rng() | 1));
  for (std::uint32_t d : divisors) {
    const FastDivisor fast(d);
    ASSERT_EQ(fast.divisor(), d);
    std::vector<std::uint32_t> numbers = {0,           1,           d - 1,      d,
                                          d + 1,       2 * d - 1,   2 * d,      0x7fffffffu,
                                          0x80000000u, 0xfffffffeu, 0xffffffffu};
    for (int i = 0; i < 300; ++i) numbers.push_back(static_cast<std::uint32_t>(rng()));
    for (std::uint32_t n : numbers) ASSERT_EQ(fast.Divide(n), n / d) << n << " / " << d;
  }
}

// Shapes from a direct caller: their products never overflow (UndefinedBehaviorSanitizer runs this
// test in scripts/sanitize.sh), and a shape past an op's limit is refused under its name.
TEST(OpDescription, ElementCountsNeverOverflow) {
  constexpr std::int64_t kHuge = std::int64_t{1} << 40;
  EXPECT_EQ(ElementCount({kHuge, kHuge, 0}), 0);
  EXPECT_EQ(ElementCount({kHuge, kHuge}), INT64_MAX);
  EXPECT_EQ(ElementCount({kHuge, kHuge, kUnknownDim}), kUnknownDim);
  EXPECT_EQ(ElementCount({2, 3}), 6);
  EXPECT_EQ(ElementCount({}), 1);
  EXPECT_EQ(RowCount({kHuge, kHuge, 5}), INT64_MAX);
  EXPECT_EQ(RowCount({kHuge, kHuge, 0, 5}), 0);
  EXPECT_EQ(RowCount({4, 5}), 4);
  EXPECT_EQ(RowCount({5}), 1);
  EXPECT_TRUE(CheckElementCount({kHuge, 1 << 20, 0}, "x", std::int64_t{1} << 62).ok());
  EXPECT_TRUE(CheckElementCount({kUnknownDim, 1 << 20}, "x", std::int64_t{1} << 62).ok());
  const Status status = CheckElementCount({std::int64_t{1} << 62, 4}, "x", std::int64_t{1} << 62);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "x of shape [4611686018427387904, 4] is larger than the kernels can address (at most "
            "4611686018427387904 elements)");
  // Empty, but its other dimensions would overflow a kernel's rows or strides.
  EXPECT_FALSE(CheckElementCount({0, kHuge, kHuge}, "x", std::int64_t{1} << 62).ok());
  EXPECT_EQ(DimsString({3, kUnknownDim}), "[3, ?]");
}

// An op whose result has twice the elements of its data along the last axis.
struct DoubleRowOp : OpDescription {
  static constexpr OpNames kNames{"test", "DoubleRow", "double_row", "x", "gain"};
  static constexpr TableRule kTable{1, 1};
  static constexpr std::int64_t kMaxElements = 1000;
  static Status Output(const Dims& x, const Params&, std::int64_t, Shape* shape, Dims* y) {
    *y = x;
    y->back() *= 2;
    shape->elements = ElementCount(*y);
    return Status::Ok();
  }
};

TEST(OpDescription, OutputRefusesADataOrResultShapeTooLarge) {
  DoubleRowOp::Shape shape;
  Dims y;
  EXPECT_TRUE(OutputOf<DoubleRowOp>({10, 50}, {}, SizesOf(1), &shape, &y).ok());
  EXPECT_EQ(OutputOf<DoubleRowOp>({1001}, {}, SizesOf(1), &shape, &y).message(),
            "x of shape [1001] is larger than the kernels can address (at most 1000 elements)");
  EXPECT_EQ(OutputOf<DoubleRowOp>({10, 60}, {}, SizesOf(1), &shape, &y).message(),
            "double_row's result of shape [10, 120] is larger than the kernels can address (at "
            "most 1000 elements)");
}

// A float64 from a caller, rounded to float32 as IEEE 754 rounds it (no undefined conversion).
TEST(Table, Float64ValuesRoundToFloat32AsIeeeRounds) {
  EXPECT_EQ(RoundFromFloat64<float>(1.5), 1.5f);
  EXPECT_EQ(RoundFromFloat64<float>(1e300), INFINITY);
  EXPECT_EQ(RoundFromFloat64<float>(-1e300), -INFINITY);
  EXPECT_EQ(RoundFromFloat64<float>(double{FLT_MAX} + 0x1p102), FLT_MAX);
  EXPECT_EQ(RoundFromFloat64<float>(double{FLT_MAX} + 0x1p103), INFINITY);
  EXPECT_EQ(RoundFromFloat64<float>(-INFINITY), -INFINITY);
  EXPECT_TRUE(std::isnan(RoundFromFloat64<float>(NAN)));
  EXPECT_EQ(RoundFromFloat64<double>(1e300), 1e300);
}

}  // namespace
}  // namespace constmem

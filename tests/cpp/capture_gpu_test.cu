// SPDX-License-Identifier: Apache-2.0
// LaunchWithTable on streams that capture CUDA graphs: replays with changing inputs and tables
// (through UpdateCapturedTable and device tables; a by-value table stays as captured), graphs
// replayed concurrently on two streams while eager calls use the bank on a third, one graph
// instantiated several times, graphs destroyed while their launches run, and every capture mode.
// Each result is checked against the host's. Built twice: capture_gpu_test_unsafe has hazard
// tracking off, which makes a captured launch write a shared bank slot, as a library that captures
// its symbol copy does, and its concurrent test must then fail (scripts/gpu-core.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "constmem/constmem.cuh"
#include "test_support.cuh"

// Slots of 2,048 entries: a table larger than the by-value capacity still fits one slot.
CONSTMEM_DEFINE_BANK(capture_table, std::uint32_t, 2048, 4);

namespace constmem {
namespace {

using testing::DeviceBuffer;
using testing::InstantiateAsChildGraph;
using testing::SpinFor;
using testing::Stream;
using testing::UnderSanitizer;

using Entry = std::uint32_t;
using SmallByValue = ByValueTable<Entry, 256>;
constexpr int kSmall = 200;   // by value under capture and eagerly
constexpr int kLarge = 1500;  // a graph's buffer under capture, a bank slot eagerly
constexpr int kCount = 4096;  // elements per launch
constexpr int kThreads = 256;

// out[i] = in[i] + sum_j table[j] * (j + 1), reading the table warp-uniformly; `spin_ns` between
// every 64 entries widens the window in which another writer could change the table.
template <class Reader>
__global__ void WeightedSum(Reader table, int n, const Entry* in, Entry* out, int count,
                            long long spin_ns) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  Entry sum = 0;
  for (int j = 0; j < n; ++j) {
    sum += table[j] * static_cast<Entry>(j + 1);
    if (spin_ns > 0 && (j & 63) == 63) SpinFor(spin_ns);
  }
  if (i < count) out[i] = in[i] + sum;
}

std::vector<Entry> Expected(const std::vector<Entry>& in, const std::vector<Entry>& table) {
  Entry sum = 0;
  for (std::size_t j = 0; j < table.size(); ++j) sum += table[j] * static_cast<Entry>(j + 1);
  std::vector<Entry> out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = in[i] + sum;
  return out;
}

std::vector<Entry> Random(int n, std::mt19937* rng) {
  std::vector<Entry> values(n);
  for (auto& v : values) v = (*rng)();
  return values;
}

Status Launch(cudaStream_t stream, const TableView<Entry>& table, const Entry* in, Entry* out,
              long long spin_ns = 0, LaunchReport* report = nullptr) {
  StrategyLimits limits;
  limits.by_value_bytes = sizeof(Entry) * SmallByValue::kCapacity;
  const Placement placement = ChoosePlacementFor<Entry>(table.size, table.source, limits);
  return LaunchWithTable<SmallByValue, capture_table_bank>(
      stream, table, placement,
      [&](int, const auto& reader) {
        WeightedSum<<<(kCount + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
            reader, static_cast<int>(table.size), in, out, kCount, spin_ns);
        return CudaStatus(cudaGetLastError(), "WeightedSum launch");
      },
      report);
}

// A graph and its executable, destroyed together.
struct Graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Graph() { Destroy(); }
  void Destroy() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    if (graph != nullptr) cudaGraphDestroy(graph);
    exec = nullptr;
    graph = nullptr;
  }
};

// Captures `body` on `stream` in `mode` and instantiates it.
template <class Body>
void Capture(cudaStream_t stream, cudaStreamCaptureMode mode, Graph* graph, Body body) {
  ASSERT_CUDA(cudaStreamBeginCapture(stream, mode));
  body();
  ASSERT_CUDA(cudaStreamEndCapture(stream, &graph->graph));
  ASSERT_CUDA(cudaGraphInstantiate(&graph->exec, graph->graph, 0));
}

std::vector<Entry> ReadAfter(cudaStream_t stream, const DeviceBuffer<Entry>& buffer) {
  cudaStreamSynchronize(stream);
  return buffer.Read();
}

enum class Form { kSmallHost, kLargeHost, kDevice };

class CapturedForms : public ::testing::TestWithParam<Form> {};

TEST_P(CapturedForms, ReplaysFollowChangingInputsAndTables) {
  REQUIRE_GPU();
  const Form form = GetParam();
  const int n = form == Form::kSmallHost ? kSmall : kLarge;
  std::mt19937 rng(11 + static_cast<int>(form));
  Stream s;
  DeviceBuffer<Entry> in(kCount), out(kCount), device_table(n);
  auto table = Random(n, &rng);
  auto input = Random(kCount, &rng);
  ASSERT_CUDA(testing::CopyToDevice(device_table.get(), table.data(), n * sizeof(Entry)));
  ASSERT_CUDA(testing::CopyToDevice(in.get(), input.data(), kCount * sizeof(Entry)));
  const TableView<Entry> view = form == Form::kDevice
                                    ? TableView<Entry>{device_table.get(), n, SourceKind::kDevice}
                                    : TableView<Entry>{table.data(), n, SourceKind::kPageableHost};
  LaunchReport report;
  Graph graph;
  const std::int64_t captured_before = CounterValue(Counter::kCapturedLaunch);
  Capture(s, cudaStreamCaptureModeGlobal, &graph,
          [&] { EXPECT_OK(Launch(s, view, in.get(), out.get(), 0, &report)); });
  ASSERT_TRUE(report.captured);
  EXPECT_EQ(CounterValue(Counter::kCapturedLaunch), captured_before + 1);
  EXPECT_EQ(report.placement,
            form == Form::kSmallHost ? Placement::kByValue : Placement::kGlobalMemory);
  EXPECT_EQ(report.capture.buffer != nullptr, form == Form::kLargeHost);
  EXPECT_EQ(report.capture.by_value, form == Form::kSmallHost);
  DeviceBuffer<Entry> staged(n);  // a device source for every other update of the graph's buffer
  // The host copy the capture read may change at once: the graph has its own.
  std::vector<Entry> captured_table = table;
  table.assign(n, 0);

  const int replays = UnderSanitizer() ? 20 : 1000;
  int mismatches = 0;
  for (int r = 0; r < replays; ++r) {
    if (r % 3 != 0) {  // inputs change every replay but every third one
      input = Random(kCount, &rng);
      ASSERT_CUDA(cudaMemcpyAsync(in.get(), input.data(), kCount * sizeof(Entry),
                                  cudaMemcpyHostToDevice, s));
    }
    if (r % 2 == 1) {  // tables every other replay
      const auto next = Random(n, &rng);
      if (form == Form::kDevice) {
        captured_table = next;
        ASSERT_CUDA(cudaMemcpyAsync(device_table.get(), next.data(), n * sizeof(Entry),
                                    cudaMemcpyHostToDevice, s));
      } else if (form == Form::kSmallHost) {
        const Status fixed = UpdateCapturedTable<Entry>(
            report.capture, {next.data(), n, SourceKind::kPageableHost}, s);
        ASSERT_EQ(fixed.code(), StatusCode::kFailedPrecondition) << fixed.ToString();
      } else if (r % 4 == 1) {
        captured_table = next;
        ASSERT_OK(UpdateCapturedTable<Entry>(report.capture,
                                             {next.data(), n, SourceKind::kPageableHost}, s));
      } else {
        captured_table = next;
        ASSERT_CUDA(cudaMemcpyAsync(staged.get(), next.data(), n * sizeof(Entry),
                                    cudaMemcpyHostToDevice, s));
        ASSERT_OK(
            UpdateCapturedTable<Entry>(report.capture, {staged.get(), n, SourceKind::kDevice}, s));
      }
    }
    ASSERT_CUDA(cudaGraphLaunch(graph.exec, s));
    mismatches += ReadAfter(s, out) != Expected(input, captured_table);
  }
  EXPECT_EQ(mismatches, 0) << "of " << replays << " replays";
}

INSTANTIATE_TEST_SUITE_P(Forms, CapturedForms,
                         ::testing::Values(Form::kSmallHost, Form::kLargeHost, Form::kDevice),
                         [](const auto& info) {
                           switch (info.param) {
                             case Form::kSmallHost:
                               return "SmallHostTableByValue";
                             case Form::kLargeHost:
                               return "LargeHostTableInTheGraphsBuffer";
                             case Form::kDevice:
                               return "DeviceTableReadInPlace";
                           }
                           return "Unknown";
                         });

// Two graphs replayed at the same time on two streams, each with its own table, while eager calls
// take the bank's slots on a third stream. With hazard tracking off a captured launch writes the
// bank's first slot at every replay, and the replays read each other's tables.
TEST(CapturedConcurrency, GraphsOnTwoStreamsAndEagerCallsOnAThirdKeepTheirTables) {
  REQUIRE_GPU();
  std::mt19937 rng(21);
  Stream sa, sb, sc;
  const auto table_a = Random(kLarge, &rng), table_b = Random(kLarge, &rng);
  const auto table_c = Random(kLarge, &rng);
  const auto input = Random(kCount, &rng);
  DeviceBuffer<Entry> in(kCount), out_a(kCount), out_b(kCount), out_c(kCount);
  DeviceBuffer<Entry> device_b(kLarge);
  ASSERT_CUDA(testing::CopyToDevice(in.get(), input.data(), kCount * sizeof(Entry)));
  ASSERT_CUDA(testing::CopyToDevice(device_b.get(), table_b.data(), kLarge * sizeof(Entry)));
  const long long spin = UnderSanitizer() ? 0 : 2000;
  Graph a, b;  // a host table (the graph's buffer) and a device table (read in place)
  Capture(sa, cudaStreamCaptureModeGlobal, &a, [&] {
    EXPECT_OK(Launch(sa, {table_a.data(), kLarge, SourceKind::kPageableHost}, in.get(), out_a.get(),
                     spin));
  });
  Capture(sb, cudaStreamCaptureModeGlobal, &b, [&] {
    EXPECT_OK(
        Launch(sb, {device_b.get(), kLarge, SourceKind::kDevice}, in.get(), out_b.get(), spin));
  });
  const auto want_a = Expected(input, table_a), want_b = Expected(input, table_b);
  const auto want_c = Expected(input, table_c);
  const int rounds = UnderSanitizer() ? 5 : 200;
  int mismatches = 0;
  for (int r = 0; r < rounds; ++r) {
    ASSERT_CUDA(cudaGraphLaunch(a.exec, sa));
    ASSERT_CUDA(cudaGraphLaunch(b.exec, sb));
    ASSERT_OK(Launch(sc, {table_c.data(), kLarge, SourceKind::kPageableHost}, in.get(), out_c.get(),
                     spin));
    mismatches += (ReadAfter(sa, out_a) != want_a) + (ReadAfter(sb, out_b) != want_b) +
                  (ReadAfter(sc, out_c) != want_c);
  }
  EXPECT_EQ(mismatches, 0) << "mismatching results of " << 3 * rounds;
}

TEST(CapturedExecutables, OneGraphInstantiatedThreeTimesAndReplayedAtOnce) {
  REQUIRE_GPU();
  std::mt19937 rng(31);
  Stream s0, s1, s2;
  const auto small = Random(kSmall, &rng), large = Random(kLarge, &rng);
  const auto input = Random(kCount, &rng);
  DeviceBuffer<Entry> in(kCount), out_small(kCount), out_large(kCount);
  ASSERT_CUDA(testing::CopyToDevice(in.get(), input.data(), kCount * sizeof(Entry)));
  cudaGraph_t graph = nullptr;
  LaunchReport small_report, large_report;
  ASSERT_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
  EXPECT_OK(Launch(s0, {small.data(), kSmall, SourceKind::kPageableHost}, in.get(), out_small.get(),
                   0, &small_report));
  EXPECT_OK(Launch(s0, {large.data(), kLarge, SourceKind::kPageableHost}, in.get(), out_large.get(),
                   0, &large_report));
  ASSERT_CUDA(cudaStreamEndCapture(s0, &graph));
  cudaGraphExec_t execs[3] = {};
  for (auto& exec : execs) ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  cudaStream_t streams[3] = {s0, s1, s2};

  // Replayed at once on three streams: each executable has its own by-value table, and they share
  // the graph's buffer, which none of them writes.
  for (int e = 0; e < 3; ++e) ASSERT_CUDA(cudaGraphLaunch(execs[e], streams[e]));
  for (int e = 0; e < 3; ++e) ASSERT_CUDA(cudaStreamSynchronize(streams[e]));
  EXPECT_EQ(out_small.Read(), Expected(input, small));
  EXPECT_EQ(out_large.Read(), Expected(input, large));
  // A host table in the graph's buffer is the graph's: an update reaches every executable.
  const auto other_large = Random(kLarge, &rng);
  ASSERT_OK(UpdateCapturedTable<Entry>(
      large_report.capture, {other_large.data(), kLarge, SourceKind::kPageableHost}, s0));
  for (int e = 0; e < 3; ++e) {
    ASSERT_CUDA(cudaGraphLaunch(execs[e], s0));
    EXPECT_EQ(ReadAfter(s0, out_large), Expected(input, other_large)) << "executable " << e;
    EXPECT_EQ(out_small.Read(), Expected(input, small));
  }
  for (auto exec : execs) cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// A graph destroyed while its launch still runs keeps its buffer until the launch is done: a
// capture made meanwhile gets another buffer, and both results are right.
TEST(CapturedLifetime, AGraphDestroyedWhileItRunsKeepsItsTableUntilItIsDone) {
  REQUIRE_GPU();
  std::mt19937 rng(41);
  Stream s, t;
  const auto first = Random(kLarge, &rng), second = Random(kLarge, &rng);
  const auto input = Random(kCount, &rng);
  DeviceBuffer<Entry> in(kCount), out_first(kCount), out_second(kCount);
  ASSERT_CUDA(testing::CopyToDevice(in.get(), input.data(), kCount * sizeof(Entry)));
  int owned_before = 0, idle_before = 0;
  ASSERT_OK(CapturedTableBuffers(0, &owned_before, &idle_before));
  {
    Graph g;
    Capture(s, cudaStreamCaptureModeGlobal, &g, [&] {
      EXPECT_OK(Launch(s, {first.data(), kLarge, SourceKind::kPageableHost}, in.get(),
                       out_first.get(), UnderSanitizer() ? 0 : 200000));
    });
    ASSERT_CUDA(cudaGraphLaunch(g.exec, s));
  }  // destroyed while the launch spins for milliseconds
  Graph h;
  Capture(t, cudaStreamCaptureModeGlobal, &h, [&] {
    EXPECT_OK(
        Launch(t, {second.data(), kLarge, SourceKind::kPageableHost}, in.get(), out_second.get()));
  });
  ASSERT_CUDA(cudaGraphLaunch(h.exec, t));
  EXPECT_EQ(ReadAfter(t, out_second), Expected(input, second));
  EXPECT_EQ(ReadAfter(s, out_first), Expected(input, first));
  h.Destroy();
  // CUDA releases a graph's user objects on a thread of its own, soon after.
  int owned = 0, idle = 0;
  for (int i = 0; i < 500; ++i) {
    ASSERT_OK(CapturedTableBuffers(0, &owned, &idle));
    if (owned == owned_before) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(owned, owned_before) << "every destroyed graph gives its buffer back";
  EXPECT_GE(idle, 2);
}

// A kernel's scratch (StreamOrderedBuffer) under capture is a buffer the graph owns, not an
// allocation node: the graph nests in another as a child graph node (what XLA's command buffers
// make of every captured call), and gives the buffer back when destroyed.
TEST(CapturedScratch, AStreamOrderedBufferIsTheGraphsAndItsGraphNests) {
  REQUIRE_GPU();
  Stream s;
  constexpr std::size_t kBytes = 1 << 20;
  DeviceBuffer<std::uint8_t> out(kBytes);
  int owned_before = 0, idle_before = 0;
  ASSERT_OK(CapturedTableBuffers(0, &owned_before, &idle_before));
  cudaGraph_t captured = nullptr;
  ASSERT_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  StreamOrderedBuffer scratch;
  Status status = scratch.Allocate(s, 0, kBytes);
  if (status.ok()) {
    status = CudaStatus(cudaMemsetAsync(scratch.data(), 0x5A, kBytes, s), "memset");
  }
  if (status.ok()) {
    status = CudaStatus(
        cudaMemcpyAsync(out.get(), scratch.data(), kBytes, cudaMemcpyDeviceToDevice, s), "copy");
  }
  if (status.ok()) status = scratch.Release();
  ASSERT_CUDA(cudaStreamEndCapture(s, &captured));
  ASSERT_OK(status);
  int owned = 0, idle = 0;
  ASSERT_OK(CapturedTableBuffers(0, &owned, &idle));
  EXPECT_EQ(owned, owned_before + 1);
  cudaGraph_t parent = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(InstantiateAsChildGraph(captured, &parent, &exec));
  ASSERT_CUDA(cudaMemsetAsync(out.get(), 0, kBytes, s));
  ASSERT_CUDA(cudaGraphLaunch(exec, s));
  ASSERT_CUDA(cudaStreamSynchronize(s));
  const std::vector<std::uint8_t> result = out.Read();
  EXPECT_EQ(std::count(result.begin(), result.end(), std::uint8_t{0x5A}),
            static_cast<std::ptrdiff_t>(kBytes));
  ASSERT_CUDA(cudaGraphExecDestroy(exec));
  ASSERT_CUDA(cudaGraphDestroy(parent));
  ASSERT_CUDA(cudaGraphDestroy(captured));
  for (int i = 0; i < 500; ++i) {  // CUDA releases user objects on a thread of its own
    ASSERT_OK(CapturedTableBuffers(0, &owned, &idle));
    if (owned == owned_before) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(owned, owned_before) << "the destroyed graph gives its scratch back";
}

class CaptureModes : public ::testing::TestWithParam<cudaStreamCaptureMode> {};

TEST_P(CaptureModes, EveryTableFormCapturesAndReplays) {
  REQUIRE_GPU();
  std::mt19937 rng(51);
  Stream s;
  const auto small = Random(kSmall, &rng), large = Random(kLarge, &rng);
  const auto device = Random(kLarge, &rng), input = Random(kCount, &rng);
  DeviceBuffer<Entry> in(kCount), out_small(kCount), out_large(kCount), out_device(kCount);
  DeviceBuffer<Entry> device_table(kLarge);
  ASSERT_CUDA(testing::CopyToDevice(in.get(), input.data(), kCount * sizeof(Entry)));
  ASSERT_CUDA(testing::CopyToDevice(device_table.get(), device.data(), kLarge * sizeof(Entry)));
  Graph g;
  Capture(s, GetParam(), &g, [&] {
    EXPECT_OK(
        Launch(s, {small.data(), kSmall, SourceKind::kPageableHost}, in.get(), out_small.get()));
    // A table larger than any staging buffer yet: the capture pins memory and allocates.
    EXPECT_OK(
        Launch(s, {large.data(), kLarge, SourceKind::kPageableHost}, in.get(), out_large.get()));
    EXPECT_OK(
        Launch(s, {device_table.get(), kLarge, SourceKind::kDevice}, in.get(), out_device.get()));
  });
  for (int r = 0; r < 3; ++r) {
    ASSERT_CUDA(cudaGraphLaunch(g.exec, s));
    EXPECT_EQ(ReadAfter(s, out_small), Expected(input, small));
    EXPECT_EQ(out_large.Read(), Expected(input, large));
    EXPECT_EQ(out_device.Read(), Expected(input, device));
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, CaptureModes,
                         ::testing::Values(cudaStreamCaptureModeGlobal,
                                           cudaStreamCaptureModeThreadLocal,
                                           cudaStreamCaptureModeRelaxed),
                         [](const auto& info) {
                           switch (info.param) {
                             case cudaStreamCaptureModeGlobal:
                               return "Global";
                             case cudaStreamCaptureModeThreadLocal:
                               return "ThreadLocal";
                             default:
                               return "Relaxed";
                           }
                         });

TEST(CapturedUpdates, WrongUpdatesAreErrorsAndChangeNothing) {
  REQUIRE_GPU();
  std::mt19937 rng(61);
  Stream s;
  const auto large = Random(kLarge, &rng), input = Random(kCount, &rng);
  DeviceBuffer<Entry> in(kCount), out(kCount), device_table(kLarge);
  ASSERT_CUDA(testing::CopyToDevice(in.get(), input.data(), kCount * sizeof(Entry)));
  ASSERT_CUDA(testing::CopyToDevice(device_table.get(), large.data(), kLarge * sizeof(Entry)));
  LaunchReport host_report, device_report;
  Graph g;
  Capture(s, cudaStreamCaptureModeGlobal, &g, [&] {
    EXPECT_OK(Launch(s, {large.data(), kLarge, SourceKind::kPageableHost}, in.get(), out.get(), 0,
                     &host_report));
    EXPECT_OK(Launch(s, {device_table.get(), kLarge, SourceKind::kDevice}, in.get(), out.get(), 0,
                     &device_report));
  });
  const auto other = Random(kLarge, &rng);
  const auto shorter = UpdateCapturedTable<Entry>(
      host_report.capture, {other.data(), kLarge - 1, SourceKind::kPageableHost}, s);
  EXPECT_EQ(shorter.code(), StatusCode::kInvalidArgument) << shorter.ToString();
  const auto in_place = UpdateCapturedTable<Entry>(
      device_report.capture, {other.data(), kLarge, SourceKind::kPageableHost}, s);
  EXPECT_EQ(in_place.code(), StatusCode::kInvalidArgument) << in_place.ToString();
  Stream capturing;
  ASSERT_CUDA(cudaStreamBeginCapture(capturing, cudaStreamCaptureModeRelaxed));
  const auto captured_update = UpdateCapturedTable<Entry>(
      host_report.capture, {other.data(), kLarge, SourceKind::kPageableHost}, capturing);
  EXPECT_EQ(captured_update.code(), StatusCode::kFailedPrecondition);
  cudaGraph_t discarded = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(capturing, &discarded));
  cudaGraphDestroy(discarded);
  ASSERT_CUDA(cudaGraphLaunch(g.exec, s));
  EXPECT_EQ(ReadAfter(s, out), Expected(input, large)) << "the failed updates changed nothing";
}

}  // namespace
}  // namespace constmem

// SPDX-License-Identifier: Apache-2.0
// constmem: per-call tables in __constant__ memory, safe on any stream, never blocking the host.
// The umbrella header for CUDA translation units; host-only code may include status.hpp,
// strategy.hpp, slot_planner.hpp and stats.hpp alone.
#pragma once

#include "constmem/bank.cuh"
#include "constmem/by_value.cuh"
#include "constmem/capture.cuh"
#include "constmem/cuda_support.cuh"
#include "constmem/dispatch.cuh"
#include "constmem/hazard_tracking.hpp"
#include "constmem/host_device.hpp"
#include "constmem/shared_table.cuh"
#include "constmem/slot_planner.hpp"
#include "constmem/staging.cuh"
#include "constmem/stats.hpp"
#include "constmem/status.hpp"
#include "constmem/strategy.hpp"
#include "constmem/stream_buffer.cuh"
#include "constmem/table.hpp"
#include "constmem/visibility.hpp"

// SPDX-License-Identifier: Apache-2.0
// Uses the core's host-only headers: placement strategy and Status, no CUDA needed.
#include <cstdio>

#include "constmem/status.hpp"
#include "constmem/strategy.hpp"

int main() {
  const auto placement = constmem::ChoosePlacement(400, constmem::TableLocation::kHost);
  const constmem::Status status = constmem::InvalidArgument("checked");
  std::printf("consumer: %s, %s\n", constmem::PlacementName(placement), status.ToString().c_str());
  return placement == constmem::Placement::kByValue && !status.ok() ? 0 : 1;
}

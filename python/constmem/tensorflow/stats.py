# SPDX-License-Identifier: Apache-2.0
"""The core's process-wide counters: which path each table took."""

from constmem import _libraries
from constmem.tensorflow import _loader


def upload_stats() -> dict[str, int]:
    """Returns a dict of counter name to value (uploads by source, skips, launches by placement).

    The `staging_*` checks of TensorFlow's pinned staging count only in test builds
    (`build_info()["bindings"]["tensorflow"]["test_hooks"]`).
    """
    values, names = _loader.ops().constmem_upload_stats()
    return {n.decode(): int(v) for n, v in zip(names.numpy(), values.numpy(), strict=True)}


table_placements = _libraries.placements_function(upload_stats)


# The core's fault points (constmem::FaultPoint), for tests of error paths through TensorFlow.
FAULT_POINTS = ("host_alloc", "event_record", "memcpy_async", "stream_wait_event", "kernel_launch")


def _inject_fault_for_testing(point: str, nth: int = 1) -> None:
    """Test builds only: makes the `nth` next CUDA call at `point` in the op library fail."""
    ops = _loader.ops()
    if not hasattr(ops, "constmem_inject_fault_for_testing"):
        raise RuntimeError("fault injection needs a test build (cmake -DCONSTMEM_TEST_HOOKS=ON)")
    ops.constmem_inject_fault_for_testing(point=FAULT_POINTS.index(point), nth=nth)

# SPDX-License-Identifier: Apache-2.0
"""The JAX ops on sharded arrays (tests/gpu/sharding_jax.py) on 8 simulated CPU devices.

The script runs in a process of its own, since the device count is set before JAX starts: every
op against its unsharded call on meshes of 8 and 4 x 2, bit for bit, with its result's split, its
compiled collectives and its per-device memory checked, then gradients, vmap, shard_map and GSPMD.
"""

import os

import pytest
from subprocesses import python_env, run_python

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "gpu", "sharding_jax.py")
EIGHT = "--xla_force_host_platform_device_count=8"


def run_checks(*args):
    env = python_env(XLA_FLAGS=EIGHT, JAX_PLATFORMS="cpu")
    result = run_python(SCRIPT, "--verbose", *args, env=env, check=False)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT")]
    failures = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert result.returncode == 0 and lines, (
        failures,
        result.stdout[-3000:],
        result.stderr[-3000:],
    )
    return lines[-1], result.stdout


def test_every_op_keeps_its_sharding_bit_for_bit_on_eight_devices():
    line, out = run_checks()
    assert "devices=8" in line and "PASS" in line
    # The costs the docs state (docs/scaling-out.md): none for rows, two permutes for a halo axis.
    assert "case fir SAME rows [Auto] {'a': 8} P('a',): no collective, memory 0.125" in out
    assert (
        "case fir SAME samples [Explicit] {'a': 8} P(None, 'a'): {'collective-permute': 2}" in out
    )
    assert "P(None, None, 'b', 'c'): {'collective-permute': 4}" in out
    assert "case upfirdn samples [Auto] {'a': 8} P(None, 'a'): {'all-gather': 1}" in out


@pytest.mark.slow  # every border, split and kind of mesh (about a minute): scripts/test-slow.sh
def test_every_border_split_and_mesh_kind():
    line, _ = run_checks("--exhaustive")
    assert "devices=8" in line and "PASS" in line

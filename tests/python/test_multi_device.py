# SPDX-License-Identifier: Apache-2.0
"""The multi-device scripts in tests/gpu, run as tests: each in a process of its own, since each
splits devices into logical ones, which must happen before TensorFlow starts them."""

import os

import pytest
from subprocesses import run_python

SCRIPTS = os.path.join(os.path.dirname(__file__), "..", "gpu")


def run_script(name, *args):
    result = run_python(os.path.join(SCRIPTS, name), *args, check=False, timeout=900)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT")]
    assert result.returncode == 0, (lines, result.stdout[-2000:], result.stderr[-3000:])
    assert lines, result.stdout[-2000:]
    return lines[-1]


def test_mirrored_strategy_gives_each_replica_its_table():
    assert "PASS" in run_script("mirrored.py")


@pytest.mark.slow  # 10,000 executions (about 12 s): scripts/test-slow.sh
def test_stress_on_logical_cpus():
    line = run_script("stress.py", "--device-type", "CPU", "--executions", "10000")
    assert "mismatching=0" in line and "errors=0" in line


@pytest.mark.gpu
def test_stress_on_logical_gpus():
    line = run_script("stress.py", "--executions", "20000")
    assert "mismatching=0" in line and "memory_flat=True" in line


@pytest.mark.gpu
def test_two_streams_share_one_symbol_safely():
    assert "mismatching_calls=0" in run_script("logical_gpus.py", "--calls", "60")


@pytest.mark.slow  # two TensorFlow worker processes (about 12 s): scripts/test-slow.sh
def test_multi_worker_training_matches_one_process():
    # Two worker processes on 127.0.0.1 (MultiWorkerMirroredStrategy); CPU here, GPUs elsewhere.
    line = run_script("multi_worker.py")
    assert "weights_equal_across_workers=True" in line and "PASS" in line

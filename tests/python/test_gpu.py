# SPDX-License-Identifier: Apache-2.0
"""The TensorFlow GPU suite: runs wherever TensorFlow sees a GPU and skips elsewhere.

The three ways a table arrives, each checked bit for bit against the CPU kernel and through the
core's counters (which path ran, that an attr is uploaded once; in test builds also that pinned
staging really was page-locked and released only after its copy ran); and 8 threads calling one
tf.function."""

import threading
import time

import constmem
import constmem.tensorflow as cm
import numpy as np
import pytest
import tensorflow as tf
from reference import frobulate_reference

pytestmark = pytest.mark.gpu

# The staging checks and fault injection exist only in test builds (CONSTMEM_TEST_HOOKS=ON), as
# the GPU bundle's library is.
TEST_HOOKS = constmem.build_info()["bindings"].get("tensorflow", {}).get("test_hooks", False)
needs_test_hooks = pytest.mark.skipif(not TEST_HOOKS, reason="needs a CONSTMEM_TEST_HOOKS build")


def counters_delta(fn):
    before = cm.upload_stats()
    result = fn()
    after = cm.upload_stats()
    return result, {k: after[k] - before[k] for k in after}


def delta_of(before):
    return {k: v - before[k] for k, v in cm.upload_stats().items()}


def run_on(device, data, table, source):
    with tf.device(device):
        t = table if source == "attr" else tf.constant(table)
        return cm.frobulate(tf.constant(data), t, source=source).numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("source", ["input", "host", "attr"])
@pytest.mark.parametrize("table_size", [1, 100, 1024, 1025, 4096, 4097, 16384, 16385, 70000])
def test_gpu_bitwise_equals_cpu(dtype, source, table_size):
    rng = np.random.default_rng(table_size * 7 + len(source))
    data = rng.standard_normal(10007).astype(dtype) * 1e3
    table = rng.integers(-(2**30), 2**30, size=table_size, dtype=np.int32)
    gpu = run_on("/GPU:0", data, table, source)
    cpu = run_on("/CPU:0", data, table, source)
    assert gpu.tobytes() == cpu.tobytes()
    np.testing.assert_array_equal(gpu, frobulate_reference(data, table))


@pytest.mark.parametrize(
    "table_size, elements, expected",
    [
        # Up to 1,024 entries the table is read where it is: no copy at all.
        (
            1024,
            70000,
            {"global_memory_launch": 1, "upload_from_device": 0, "constant_bank_launch": 0},
        ),
        # Larger tables are copied device-to-device into a constant bank, unless the call is
        # small (at most 65,536 elements).
        (
            2000,
            70000,
            {"global_memory_launch": 0, "upload_from_device": 1, "constant_bank_launch": 1},
        ),
        (
            2000,
            4096,
            {"global_memory_launch": 1, "upload_from_device": 0, "constant_bank_launch": 0},
        ),
    ],
)
def test_device_input_placement(table_size, elements, expected):
    data = np.arange(elements, dtype=np.float32)
    table = np.arange(table_size, dtype=np.int32)
    with tf.device("/GPU:0"):
        x, t = tf.constant(data), tf.constant(table)
        assert "GPU" in t.device
        out, delta = counters_delta(lambda: cm.frobulate(x, t, source="input").numpy())
    np.testing.assert_array_equal(out, frobulate_reference(data, table))
    assert {name: delta[name] for name in expected} == expected
    assert delta["upload_from_pinned_host"] == 0 and delta["upload_from_pageable_host"] == 0


def test_small_host_table_goes_by_value():
    data = np.ones(1000, np.float32)
    table = np.arange(1024, dtype=np.int32)
    out, delta = counters_delta(lambda: run_on("/GPU:0", data, table, "host"))
    np.testing.assert_array_equal(out, frobulate_reference(data, table))
    assert delta["by_value_launch"] == 1
    assert delta["upload_from_pinned_host"] == 0 and delta["upload_from_device"] == 0


def test_large_host_table_is_staged_in_page_locked_memory_and_kept_alive():
    data = np.ones(1 << 20, np.float32)
    calls = 20
    tables = [np.full(3000, i, np.int32) for i in range(calls)]
    before = cm.upload_stats()
    with tf.device("/GPU:0"):
        x = tf.constant(data)
        outs = [cm.frobulate(x, tf.constant(t), source="host") for t in tables]
        outs = [o.numpy() for o in outs]
    for out, table in zip(outs, tables, strict=True):
        np.testing.assert_array_equal(out, frobulate_reference(data, table))
    assert delta_of(before)["upload_from_pinned_host"] == calls
    if not TEST_HOOKS:
        return
    # The event manager releases staging shortly after the stream passes the copy.
    deadline = time.time() + 10
    while True:
        delta = delta_of(before)
        if (
            delta["staging_released_after_copy"] + delta["staging_released_early"] >= calls
            or time.time() > deadline
        ):
            break
        time.sleep(0.01)
    assert delta["staging_pinned_verified"] == calls, (
        "TensorFlow's host allocator gave pageable memory"
    )
    assert delta["staging_not_pinned"] == 0
    assert delta["staging_released_after_copy"] == calls
    assert delta["staging_released_early"] == 0


def test_attr_is_uploaded_once_per_device_and_content():
    data = np.zeros(4096, np.float32)
    table_a = np.arange(1, 2001, dtype=np.int32)  # over the by-value limit: goes to the bank
    table_b = table_a[::-1].copy()

    @tf.function
    def both(x):
        return cm.frobulate(x, table_a), cm.frobulate(x, table_b)

    with tf.device("/GPU:0"):
        x = tf.constant(data)
        both(x)  # the first call may upload each table once

        def run():
            return [tuple(o.numpy() for o in both(x)) for _ in range(50)]

        outs, delta = counters_delta(run)
    for a, b in outs:
        np.testing.assert_array_equal(a, frobulate_reference(data, table_a))
        np.testing.assert_array_equal(b, frobulate_reference(data, table_b))
    assert delta["upload_skipped"] == 100, delta
    assert delta["upload_from_pageable_host"] == 0, "an unchanged attr was uploaded again"


def test_eight_threads_share_one_tf_function():
    calls_per_thread = 10_000
    data = np.random.default_rng(1).standard_normal(1024).astype(np.float32)
    step = tf.function(lambda x, t: cm.frobulate(x, t))
    failures = []

    def worker(k):
        rng = np.random.default_rng(k)
        with tf.device("/GPU:0"):
            x = tf.constant(data)
            table_np = rng.integers(-1000, 1000, size=1500 + k, dtype=np.int32)
            table = tf.constant(table_np)
            expected = frobulate_reference(data, table_np)
            bad = 0
            for _ in range(calls_per_thread):
                bad += not np.array_equal(step(x, table).numpy(), expected)
            failures.append(bad)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == [0] * 8


@needs_test_hooks
def test_a_failed_launch_still_releases_its_pinned_staging():
    # A host table too large to pass by value is copied through a pinned temp; when the launch
    # fails after that copy was queued, the temp must still be kept alive until the copy ran.
    from constmem.tensorflow.stats import _inject_fault_for_testing

    rng = np.random.default_rng(21)
    data = rng.standard_normal(4099).astype(np.float32)
    table = rng.integers(-1000, 1000, size=4096, dtype=np.int32)
    before = cm.upload_stats()
    _inject_fault_for_testing("kernel_launch", 1)
    with pytest.raises(tf.errors.InternalError, match="kernel launch"):
        run_on("/GPU:0", data, table, "host")
    _inject_fault_for_testing("kernel_launch", 0)
    np.testing.assert_array_equal(
        run_on("/GPU:0", data, table, "host"), frobulate_reference(data, table)
    )
    after = cm.upload_stats()
    assert after["staging_pinned_verified"] - before["staging_pinned_verified"] == 2
    for _ in range(100):  # the keep-alive callbacks run once the stream has passed the copies
        after = cm.upload_stats()
        released = sum(
            after[k] - before[k] for k in ("staging_released_after_copy", "staging_released_early")
        )
        if released == 2:
            break
        time.sleep(0.05)
    assert after["staging_released_after_copy"] - before["staging_released_after_copy"] == 2

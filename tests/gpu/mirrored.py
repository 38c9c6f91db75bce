# SPDX-License-Identifier: Apache-2.0
"""Frobulate under tf.distribute.MirroredStrategy: per-device constant memory.

Each replica uses its own table (uploaded device-to-device into that device's constant bank) and
its result is checked; then a training step through Frobulate must give the same gradient as a
single-device run. Uses every physical GPU when there are two or more; otherwise splits GPU 0 into
two logical GPUs (one physical symbol shared by two streams), or two logical CPUs without a GPU.
Reduction goes through ReductionToOneDevice, so no NCCL is needed. Prints one RESULT line.
"""

import sys

import numpy as np
import tensorflow as tf


def configure():
    gpus = tf.config.list_physical_devices("GPU")
    if len(gpus) >= 2:
        return "physical GPUs", [f"/GPU:{i}" for i in range(len(gpus))]
    if gpus:
        tf.config.set_logical_device_configuration(
            gpus[0], [tf.config.LogicalDeviceConfiguration(memory_limit=4096)] * 2
        )
        return "logical GPUs on one physical GPU", ["/GPU:0", "/GPU:1"]
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2
    )
    return "logical CPUs", ["/CPU:0", "/CPU:1"]


def main():
    kind, devices = configure()
    import constmem.tensorflow as cm

    strategy = tf.distribute.MirroredStrategy(
        devices, cross_device_ops=tf.distribute.ReductionToOneDevice()
    )
    replicas = strategy.num_replicas_in_sync
    rng = np.random.default_rng(6)
    base_table = rng.integers(-50, 50, size=3000, dtype=np.int32)
    # Quarters and integers: every partial sum is exact in float32, so data + sum(table) is exact.
    data = (rng.integers(-1024, 1024, size=1 << 18) / 4).astype(np.float32)

    # 1. Each replica, its own table.
    @tf.function
    def forward(x):
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        table = tf.constant(base_table) + tf.cast(replica, tf.int32) * 7
        return cm.frobulate(x, table), table

    mismatching = 0
    checks = 0
    for _ in range(50):
        outs, tables = strategy.run(forward, args=(tf.constant(data),))
        for out, table in zip(
            strategy.experimental_local_results(outs),
            strategy.experimental_local_results(tables),
            strict=True,
        ):
            expected = data + np.float32(np.sum(table.numpy(), dtype=np.int64))
            mismatching += int(not np.array_equal(out.numpy(), expected))
            checks += 1
    distinct = len({int(t.numpy().sum()) for t in strategy.experimental_local_results(tables)})

    # 2. A training step through Frobulate: gradients equal a single-device run.
    global_batch = 64
    features = rng.standard_normal((global_batch, 16)).astype(np.float32)
    targets = rng.standard_normal((global_batch, 16)).astype(np.float32)
    table = np.arange(1, 1501, dtype=np.int32) % 5 - 2
    init = rng.standard_normal(16).astype(np.float32)

    def loss_fn(w, x, y):
        prediction = cm.frobulate(x * w, table)  # attr table: uploaded once per device
        return tf.reduce_sum(tf.square(prediction - y)) / global_batch

    with strategy.scope():
        w = tf.Variable(init)

    dataset = tf.data.Dataset.from_tensor_slices((features, targets)).batch(global_batch)
    batch = next(iter(strategy.experimental_distribute_dataset(dataset)))

    @tf.function
    def replica_grad(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(w, x, y)
        return tape.gradient(loss, w)

    per_replica = strategy.run(replica_grad, args=batch)
    distributed = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None).numpy()

    with tf.device(devices[0]):
        w_single = tf.Variable(init)
        with tf.GradientTape() as tape:
            loss = loss_fn(w_single, tf.constant(features), tf.constant(targets))
        single = tape.gradient(loss, w_single).numpy()
    max_diff = float(np.max(np.abs(distributed - single)))
    ok = (
        mismatching == 0
        and distinct == replicas
        and max_diff <= 1e-4 * max(1.0, float(np.max(np.abs(single))))
    )
    print(
        f"RESULT mirrored kind='{kind}' replicas={replicas} replica_checks={checks} "
        f"mismatching={mismatching} distinct_tables={distinct} grad_max_abs_diff={max_diff:.3g} "
        f"{'PASS' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

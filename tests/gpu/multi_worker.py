"""MultiWorkerMirroredStrategy over two worker processes on this machine (127.0.0.1 only): a
training step through Frobulate, Polyval and FirFilter with a different table per op, its weights
compared with the same step run by one process on the CPU. Each worker uses the devices it sees
(every GPU, else its CPU); with --gpu-per-worker worker i sees only GPU i.

    python tests/gpu/multi_worker.py                   # starts both workers, checks, prints RESULT
    python tests/gpu/multi_worker.py --gpu-per-worker  # on a machine with two GPUs
"""

import json
import os
import socket
import subprocess
import sys

import numpy as np

TABLES = ([3, -1, 4], list(range(-50, 51)), [2, -2] * 750)  # 1,500 entries: a constant bank
COEFFS = [0.25, -0.5, 1.0, 0.125]
TAPS = [0.5, -0.25, 0.125, 1.0, 0.0625]
STEPS = 3


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def train(strategy, tf, cm):
    """Returns the weights after STEPS of SGD on a model whose forward pass is three Frobulates."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 6)).astype(np.float32)
    y = rng.standard_normal((16, 6)).astype(np.float32)
    with strategy.scope():
        w = tf.Variable(np.linspace(0.5, 1.5, 6, dtype=np.float32))
    optimizer = tf.keras.optimizers.SGD(0.01)

    @tf.function
    def step(xb, yb):
        def replica(xr, yr):
            with tf.GradientTape() as tape:
                h = cm.polyval(COEFFS, xr * w)
                h = cm.fir_filter(h, TAPS, padding="SAME")
                for table in TABLES:
                    h = cm.frobulate(h, table)
                loss = tf.reduce_sum((h - yr) ** 2) / 16.0
            grad = tape.gradient(loss, w)
            optimizer.apply_gradients([(grad, w)])

        strategy.run(replica, args=(xb, yb))

    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    batches = iter(strategy.experimental_distribute_dataset(dataset.repeat(STEPS)))
    for _ in range(STEPS):
        xb, yb = next(batches)
        step(xb, yb)
    return w.numpy()


def worker(index, cluster, out):
    os.environ["TF_CONFIG"] = json.dumps(
        {"cluster": cluster, "task": {"type": "worker", "index": index}}
    )
    import constmem.tensorflow as cm
    import tensorflow as tf

    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING
    )
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    np.save(out, train(strategy, tf, cm))
    with open(out + ".devices", "w") as f:  # where this worker's replicas ran
        f.write(",".join(d.split("/")[-1] for d in strategy.extended.worker_devices))


def single(out):
    import constmem.tensorflow as cm
    import tensorflow as tf

    np.save(out, train(tf.distribute.OneDeviceStrategy("/cpu:0"), tf, cm))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        return worker(int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4])
    if len(sys.argv) > 1 and sys.argv[1] == "--single":
        return single(sys.argv[2])
    import tempfile

    work = tempfile.mkdtemp()
    cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
    # Workers that share a GPU (or a process that already holds one) must not each reserve all
    # of its memory up front.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_FORCE_GPU_ALLOW_GROWTH="true")
    gpu_per_worker = "--gpu-per-worker" in sys.argv[1:]
    me = os.path.abspath(__file__)
    procs = [
        subprocess.Popen(
            [sys.executable, me, "--worker", str(i), json.dumps(cluster), f"{work}/w{i}.npy"],
            env=dict(env, CUDA_VISIBLE_DEVICES=str(i)) if gpu_per_worker else env,
        )
        for i in range(2)
    ]
    single_run = subprocess.run(
        [sys.executable, me, "--single", f"{work}/single.npy"], env=env, timeout=300
    )
    codes = [p.wait(timeout=300) for p in procs]
    if single_run.returncode or any(codes):
        print(f"RESULT multi_worker FAIL exit codes {codes} single {single_run.returncode}")
        return 1
    w0, w1, one = (np.load(f"{work}/{name}.npy") for name in ("w0", "w1", "single"))
    # Both workers see the whole batch; the all-reduce sums their (equal) gradients and the
    # strategy divides by 2, so the step equals the single-process one.
    diff = float(max(np.max(np.abs(w0 - one)), np.max(np.abs(w1 - one))))
    same = np.array_equal(w0, w1)
    devices = ["+".join(open(f"{work}/w{i}.npy.devices").read().split(",")) for i in range(2)]
    ok = same and diff < 1e-5  # the same sums, reduced in another order
    print(
        f"RESULT multi_worker workers=2 devices={'|'.join(devices)} "
        f"weights_equal_across_workers={same} "
        f"max_abs_diff_vs_single={diff:.2e} {'PASS' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

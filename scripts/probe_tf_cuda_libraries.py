# SPDX-License-Identifier: Apache-2.0
"""What the CUDA 12 library stand-ins allow (docs/gpu-libraries.md): TensorFlow registers the GPU,
elementwise ops and constmem's ops run, and what ops that need cuBLAS, cuDNN or cuFFT do. Each of
those runs in a process of its own, followed there by an elementwise op, because a stand-in can
crash the process (a segmentation fault: TensorFlow does not check that a dlopened library has
its symbols). Prints one line per probe; exits non-zero only if the elementwise op or Frobulate
fails, or a child process dies without a signal.

  probe_tf_cuda_libraries.py          all probes
  probe_tf_cuda_libraries.py NAME     one library probe, in this process
"""

import signal
import subprocess
import sys

import constmem.tensorflow as cm
import numpy as np
import tensorflow as tf


def probe(name, fn):
    try:
        value = fn()
        print(f"{name:<28} ran: {value}", flush=True)
        return True
    except Exception as error:  # the point is to see which error, not to hide it
        print(
            f"{name:<28} error: {type(error).__name__}: {str(error).splitlines()[0][:150]}",
            flush=True,
        )
        return False


def square():
    return tf.constant(np.arange(16, dtype=np.float32).reshape(4, 4))


LIBRARY_PROBES = {
    "matmul (cuBLAS)": lambda x: float(tf.reduce_sum(tf.matmul(x, x))),
    "conv2d (cuDNN)": lambda x: float(
        tf.reduce_sum(tf.nn.conv2d(tf.ones([1, 8, 8, 1]), tf.ones([3, 3, 1, 1]), 1, "SAME"))
    ),
    "fft (cuFFT)": lambda x: float(tf.reduce_sum(tf.abs(tf.signal.fft(tf.complex(x, x))))),
}


def run_library_probe(name):
    with tf.device("/GPU:0"):
        x = square()
        probe(name, lambda: LIBRARY_PROBES[name](x))
        probe("  then elementwise add", lambda: float(tf.reduce_sum(x * 2.0)))


def main():
    if len(sys.argv) == 2:
        run_library_probe(sys.argv[1])
        return 0
    print("GPUs:", [d.name for d in tf.config.list_physical_devices("GPU")], flush=True)
    with tf.device("/GPU:0"):
        x = square()
        ok = probe("elementwise add", lambda: float(tf.reduce_sum(x + 1.0)))
        ok &= probe("cm.frobulate", lambda: float(tf.reduce_sum(cm.frobulate(x, [1, 2]))))
    for name in LIBRARY_PROBES:
        child = subprocess.run([sys.executable, __file__, name], capture_output=True, text=True)
        print(child.stdout, end="")
        if child.returncode < 0:
            print(f"{name:<28} crashed: {signal.Signals(-child.returncode).name}")
        elif child.returncode != 0:
            print(f"{name:<28} child exited {child.returncode}: {child.stderr.splitlines()[-1:]}")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

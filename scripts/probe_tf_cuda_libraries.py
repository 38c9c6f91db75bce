"""What the CUDA 12 library stand-ins allow (docs/gpu-libraries.md): TensorFlow registers the GPU,
elementwise ops and constmem's ops run, and ops that need cuBLAS or cuDNN fail with an error
instead of crashing the process. Prints one line per probe."""

import numpy as np
import tensorflow as tf

import constmem


def probe(name, fn):
    try:
        value = fn()
        print(f"{name:<28} ran: {value}")
    except Exception as error:  # the point is to see which error, not to hide it
        print(f"{name:<28} error: {type(error).__name__}: {str(error).splitlines()[0][:150]}")


def main():
    print("GPUs:", [d.name for d in tf.config.list_physical_devices("GPU")])
    with tf.device("/GPU:0"):
        x = tf.constant(np.arange(16, dtype=np.float32).reshape(4, 4))
        probe("elementwise add", lambda: float(tf.reduce_sum(x + 1.0)))
        probe("constmem.frobulate", lambda: float(tf.reduce_sum(constmem.frobulate(x, [1, 2]))))
        probe("matmul (cuBLAS)", lambda: float(tf.reduce_sum(tf.matmul(x, x))))
        probe("conv2d (cuDNN)", lambda: float(tf.reduce_sum(tf.nn.conv2d(tf.ones([1, 8, 8, 1]), tf.ones([3, 3, 1, 1]), 1, "SAME"))))
        probe("fft (cuFFT)", lambda: float(tf.reduce_sum(tf.abs(tf.signal.fft(tf.complex(x, x))))))
        probe("after the failures: add", lambda: float(tf.reduce_sum(x * 2.0)))


if __name__ == "__main__":
    main()

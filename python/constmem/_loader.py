"""Loads the op library on first use, so that `import constmem` stays cheap."""

import os
import threading

import tensorflow as tf

_LIBRARY_NAME = "_constmem_ops.so"
_lock = threading.Lock()
_ops = None


def library_path():
    """Where the op library is: $CONSTMEM_OPS_LIBRARY, else beside this package."""
    override = os.environ.get("CONSTMEM_OPS_LIBRARY")
    if override:
        return override
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ops", _LIBRARY_NAME)


def ops():
    """The loaded op module (`tf.load_op_library`), loaded once per process."""
    global _ops
    if _ops is None:
        with _lock:
            if _ops is None:
                path = library_path()
                if not os.path.exists(path):
                    raise FileNotFoundError(
                        f"constmem op library not found at {path}; build it with scripts/build.sh "
                        "or `pip install .`"
                    )
                _ops = tf.load_op_library(path)
    return _ops

# SPDX-License-Identifier: Apache-2.0
"""Loads the op library once per process, after checking that it was built for this TensorFlow."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import tensorflow as tf

_LIBRARY_NAME = "_constmem_ops.so"
_lock = threading.Lock()
_ops = None


def library_path() -> str:
    """Where the op library is: $CONSTMEM_OPS_LIBRARY, else beside this package.

    An installed package has it in `_ops/`; a source tree in `_dev/`, where its builds copy it.
    """
    override = os.environ.get("CONSTMEM_OPS_LIBRARY")
    if override:
        return override
    package = os.path.dirname(os.path.abspath(__file__))
    development = os.path.join(package, "_dev", _LIBRARY_NAME)
    if os.path.exists(development):
        return development
    return os.path.join(package, "_ops", _LIBRARY_NAME)


def build_info() -> dict[str, Any]:
    """What the op library was built for: constmem and TensorFlow versions, GPU kernels, archs.

    Read from the JSON file the build writes beside the library; empty when there is none (a
    library copied without it).
    """
    path = os.path.splitext(library_path())[0] + ".json"
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _check_tensorflow_version(info: dict[str, Any], path: str) -> None:
    built_for = info.get("tensorflow")
    if built_for and built_for != tf.__version__:
        raise ImportError(
            f"constmem's op library {path} was built against TensorFlow {built_for}, but this "
            f"process runs TensorFlow {tf.__version__}; the C++ ABI differs between releases. "
            f"Install TensorFlow {built_for}, or rebuild constmem against {tf.__version__}."
        )


def library_constant(name: str) -> int:
    """An integer the op library exports as `long long name()`: its limits, defined once in C++."""
    import ctypes

    ops()  # loaded through TensorFlow first; ctypes then shares the same handle
    function = getattr(ctypes.CDLL(library_path()), name)
    function.restype = ctypes.c_longlong
    return int(function())


def ops():
    """The loaded op module (`tf.load_op_library`), loaded once per process."""
    global _ops
    if _ops is None:
        with _lock:
            if _ops is None:
                path = library_path()
                if not os.path.exists(path):
                    raise ImportError(
                        f"constmem op library not found at {path}; build it with scripts/build.sh "
                        "or `pip install .`"
                    )
                _check_tensorflow_version(build_info(), path)
                _ops = tf.load_op_library(path)
    return _ops

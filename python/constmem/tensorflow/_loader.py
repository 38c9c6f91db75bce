# SPDX-License-Identifier: Apache-2.0
"""Loads the TensorFlow op library once per process, checking the TensorFlow it was built for."""

from __future__ import annotations

import threading
from typing import Any

import tensorflow as tf

from constmem import _libraries

_lock = threading.Lock()
_ops = None


def library_path() -> str:
    """Where the TensorFlow op library is ($CONSTMEM_TENSORFLOW_LIBRARY overrides)."""
    return _libraries.library_path("tensorflow")


def build_info() -> dict[str, Any]:
    """What the op library was built for: constmem and TensorFlow versions, GPU kernels, archs."""
    return _libraries.library_info("tensorflow")


def ops():
    """The loaded op module (`tf.load_op_library`), loaded once per process."""
    global _ops
    if _ops is None:
        with _lock:
            if _ops is None:
                _libraries.check_framework_version("tensorflow", tf.__version__)
                _ops = tf.load_op_library(library_path())
    return _ops

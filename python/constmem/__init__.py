# SPDX-License-Identifier: Apache-2.0
"""constmem: per-call tables in CUDA constant memory for custom ops, in any framework.

`import constmem` imports no framework. Each framework's ops are in a subpackage that imports only
its own framework:

    import constmem.tensorflow   # TensorFlow ops (SavedModels that use them load after this)
    import constmem.torch        # torch.ops.constmem.*, with typed wrappers
"""

from __future__ import annotations

from typing import Any

from constmem._libraries import LIBRARIES, library_info

__version__ = "0.2.0"
"""The package's version (pyproject.toml's)."""

_MOVED = ("frobulate", "polyval", "fir_filter", "upload_stats", "MAX_TABLE_SIZE", "library_path")


def build_info() -> dict[str, Any]:
    """What this installation holds: its version and, per framework binding, what it was built for.

    `{"constmem": "0.2.0", "bindings": {"tensorflow": {...}, "torch": {...}}}`, each binding with
    the framework release, `gpu_kernels`, `cuda_architectures` and `test_hooks` (true only in a
    test build, with fault injection); a framework without a built library is absent.
    """
    bindings = {name: info for name in LIBRARIES if (info := library_info(name))}
    return {"constmem": __version__, "bindings": bindings}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        raise AttributeError(
            f"constmem.{name} is TensorFlow's and moved to constmem.tensorflow.{name}: "
            "`import constmem.tensorflow` registers the TensorFlow ops"
        )
    raise AttributeError(f"module 'constmem' has no attribute {name!r}")


__all__ = ["__version__", "build_info"]

# SPDX-License-Identifier: Apache-2.0
"""Where each framework's op library is and what it was built for; imports no framework."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

_PACKAGE = os.path.dirname(os.path.abspath(__file__))

# One op library per framework binding, named after it.
LIBRARIES = {"tensorflow": "_constmem_ops", "torch": "_constmem_torch", "jax": "_constmem_jax"}
_DISPLAY = {"tensorflow": "TensorFlow", "torch": "PyTorch", "jax": "JAX"}


def library_path(framework: str) -> str:
    """Where `framework`'s op library is: $CONSTMEM_<FRAMEWORK>_LIBRARY, else beside the package.

    An installed package has them in `_ops/`; a source tree in `_dev/`, where its builds copy them.
    """
    name = LIBRARIES[framework]
    override = os.environ.get(f"CONSTMEM_{framework.upper()}_LIBRARY")
    if override:
        return override
    development = os.path.join(_PACKAGE, "_dev", name + ".so")
    if os.path.exists(development):
        return development
    return os.path.join(_PACKAGE, "_ops", name + ".so")


def library_info(framework: str) -> dict[str, Any]:
    """What `framework`'s op library was built for, from the JSON file beside it; {} if none."""
    path = os.path.splitext(library_path(framework))[0] + ".json"
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def check_framework_version(framework: str, running: str | None) -> None:
    """Refuses a missing library, or one built for another release of `framework` than `running`.

    `running` None accepts any release (a library on a stable ABI).
    """
    path = library_path(framework)
    if not os.path.exists(path):
        raise ImportError(
            f"constmem's {framework} op library is not at {path}; build it with scripts/build.sh "
            f"or `pip install .` in an environment that has {framework}"
        )
    built_for = library_info(framework).get(framework)
    if running is not None and built_for and built_for != running:
        name = _DISPLAY[framework]
        raise ImportError(
            f"constmem's op library {path} was built against {name} {built_for}, but this "
            f"process runs {name} {running}; the C++ ABI differs between releases. Install "
            f"{name} {built_for}, or rebuild constmem against {running}."
        )


def library_constant(path: str, name: str) -> int:
    """An integer a loaded op library exports as `long long name()`: an op's limit, defined once."""
    import ctypes

    function = getattr(ctypes.CDLL(path), name)
    function.restype = ctypes.c_longlong
    return int(function())


def library_counters(path: str) -> dict[str, int]:
    """The core's counters in a loaded op library (which path each table took), by name."""
    import ctypes

    library = ctypes.CDLL(path)
    library.constmem_counter_name.restype = ctypes.c_char_p
    library.constmem_counter_value.restype = ctypes.c_longlong
    return {
        library.constmem_counter_name(i).decode(): int(library.constmem_counter_value(i))
        for i in range(library.constmem_counter_count())
    }


# Each op's limit, as its op library exports it.
_LIMITS = {
    "MAX_TABLE_SIZE": "constmem_frobulate_max_table_size",
    "MAX_COEFFICIENTS": "constmem_polyval_max_coefficients",
    "MAX_TAPS": "constmem_fir_filter_max_taps",
    "MAX_KNOTS": "constmem_interpolate_max_knots",
}


def op_limits(path: str) -> tuple[int, int, int, int]:
    """MAX_TABLE_SIZE, MAX_COEFFICIENTS, MAX_TAPS and MAX_KNOTS of the op library at `path`."""
    return tuple(library_constant(path, symbol) for symbol in _LIMITS.values())


def accessors(framework: str, path: str) -> tuple[Callable[[], dict[str, int]], Callable[[], str]]:
    """upload_stats() and library_path() of `framework`'s loaded op library at `path`."""
    name = _DISPLAY[framework]

    def upload_stats() -> dict[str, int]:
        return library_counters(path)

    def loaded_library_path() -> str:
        return path

    upload_stats.__doc__ = (
        f"The core's counters in the {name} op library: which path each table took, by name."
    )
    loaded_library_path.__doc__ = f"The loaded {name} op library."
    loaded_library_path.__name__ = loaded_library_path.__qualname__ = "library_path"
    return upload_stats, loaded_library_path

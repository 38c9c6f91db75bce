# SPDX-License-Identifier: Apache-2.0
"""Where each framework's op library is and what it was built for; imports no framework."""

from __future__ import annotations

import functools
import json
import numbers
import os
from collections.abc import Callable
from typing import Any

_PACKAGE = os.path.dirname(os.path.abspath(__file__))

# One op library per framework binding, named after it.
LIBRARIES = {"tensorflow": "_constmem_ops", "torch": "_constmem_torch", "jax": "_constmem_jax"}
_DISPLAY = {"tensorflow": "TensorFlow", "torch": "PyTorch", "jax": "JAX"}


# The distributions of prebuilt op libraries, one per framework and CUDA major version, each an
# import package that holds the library and its JSON file (`pip install constmem[torch]`).
CUDA_VARIANTS = ("cu13", "cu12")
# The oldest driver API version (cuDriverGetVersion) each CUDA major version's kernels run on:
# CUDA 13 needs R580, CUDA 12 R525 (minor version compatibility).
_DRIVER_FOR_CUDA = {13: 13000, 12: 12000}


def distribution_package(framework: str, variant: str) -> str:
    """The import package of `framework`'s prebuilt library for `variant` ("cu13", "cu12")."""
    return f"constmem_{framework}_{variant}"


def _installed_variants(framework: str) -> dict[str, str]:
    """The path of each installed prebuilt library of `framework`, by variant."""
    import importlib.util

    found = {}
    for variant in CUDA_VARIANTS:
        spec = importlib.util.find_spec(distribution_package(framework, variant))
        if spec is not None and spec.submodule_search_locations:
            path = os.path.join(spec.submodule_search_locations[0], LIBRARIES[framework] + ".so")
            if os.path.exists(path):
                found[variant] = path
    return found


@functools.cache
def driver_cuda_version() -> int | None:
    """The CUDA version the NVIDIA driver supports (cuDriverGetVersion, 13000 for 13.0), or None.

    None where no driver is installed: CPU kernels only. Asked once a process (library lookups
    and the import check ask it again).
    """
    import ctypes

    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    version = ctypes.c_int(0)
    if libcuda.cuDriverGetVersion(ctypes.byref(version)) != 0:
        return None
    return version.value


def _driver_release() -> str:
    """The driver's release as the kernel module states it ("580.95.05"), or "unknown"."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as f:
            words = f.readline().split()
    except OSError:
        return "unknown"
    return next((w for w in words if w[:1].isdigit() and "." in w), "unknown")


def _cuda_text(version: int) -> str:
    return f"{version // 1000}.{version % 1000 // 10}"


def library_path(framework: str) -> str:
    """Where `framework`'s op library is.

    In order: $CONSTMEM_<FRAMEWORK>_LIBRARY; a source tree's `_dev/` (where its builds copy
    them); a source build's `_ops/` (`pip install .`); the prebuilt distributions, the newest CUDA
    that the driver runs first.
    """
    name = LIBRARIES[framework]
    override = os.environ.get(f"CONSTMEM_{framework.upper()}_LIBRARY")
    if override:
        return override
    for folder in ("_dev", "_ops"):
        path = os.path.join(_PACKAGE, folder, name + ".so")
        if os.path.exists(path):
            return path
    variants = _installed_variants(framework)
    if variants:
        driver = driver_cuda_version()
        for variant, path in variants.items():
            if driver is None or driver >= _DRIVER_FOR_CUDA[int(variant[2:])]:
                return path
        return next(iter(variants.values()))  # too new for the driver: check_driver says so
    return os.path.join(_PACKAGE, "_ops", name + ".so")


def library_info(framework: str) -> dict[str, Any]:
    """What `framework`'s op library was built for, from the JSON file beside it; {} if none."""
    path = os.path.splitext(library_path(framework))[0] + ".json"
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        info = json.load(f)
    package = os.path.basename(os.path.dirname(path))
    info["distribution"] = (
        package.replace("_", "-") if package.startswith("constmem_") else "constmem (source build)"
    )
    return info


def check_driver(framework: str) -> None:
    """Refuses a library whose kernels need a newer NVIDIA driver than this machine's.

    Without a driver (no GPU) every library loads: its CPU kernels run.
    """
    cuda = library_info(framework).get("cuda")
    driver = driver_cuda_version()
    if not cuda or driver is None:
        return
    major = int(cuda.split(".")[0])
    needed = _DRIVER_FOR_CUDA.get(major, major * 1000)
    if driver >= needed:
        return
    name = _DISPLAY[framework]
    variant = f"cu{driver // 1000}"
    hint = (
        f"install constmem-{framework}-{variant} (`pip install constmem[{framework}-{variant}]`)"
        if variant in CUDA_VARIANTS
        else "no constmem build supports a driver this old"
    )
    raise ImportError(
        f"constmem's {name} op library {library_path(framework)} has CUDA {cuda} kernels, which "
        f"need an NVIDIA driver for CUDA {_cuda_text(needed)} or newer; this machine's driver "
        f"{_driver_release()} supports CUDA {_cuda_text(driver)}. Update the driver, or {hint}."
    )


def check_framework_version(framework: str, running: str | None) -> None:
    """Refuses a missing library, one built for another release, or one the driver cannot run.

    The release is `running`'s: None accepts any release (a library on a stable ABI).
    """
    path = library_path(framework)
    if not os.path.exists(path):
        raise ImportError(
            f"constmem's {framework} op library is not at {path}: `pip install "
            f"constmem[{framework}]` installs it (constmem-{framework}-cu13; "
            f"constmem[{framework}-cu12] for drivers older than R580), or build it with "
            f"scripts/build.sh or `pip install .` in an environment that has {framework}"
        )
    built_for = library_info(framework).get(framework)
    if running is not None and built_for and built_for != running:
        name = _DISPLAY[framework]
        raise ImportError(
            f"constmem's op library {path} was built against {name} {built_for}, but this "
            f"process runs {name} {running}; the C++ ABI differs between releases. Install "
            f"{name} {built_for}, or rebuild constmem against {running}."
        )
    check_driver(framework)


def library_counters(path: str) -> dict[str, int]:
    """The core's counters in a loaded op library (which path each table took), by name."""
    import ctypes

    library = ctypes.CDLL(path)
    # Exported beside the op registry (CONSTMEM_EXPORT_OP_REGISTRY): an op library of one's own
    # has them too.
    name = library.constmem_op_registry_counter_name
    value = library.constmem_op_registry_counter_value
    name.restype, name.argtypes = ctypes.c_char_p, (ctypes.c_int,)
    value.restype, value.argtypes = ctypes.c_longlong, (ctypes.c_int,)
    return {
        name(i).decode(): int(value(i)) for i in range(library.constmem_op_registry_counter_count())
    }


# The counters that say where a GPU launch put its table, by placement name.
_PLACEMENT_COUNTERS = {
    "by_value": "by_value_launch",
    "constant_bank": "constant_bank_launch",
    "global_memory": "global_memory_launch",
    "shared_memory": "shared_memory_launch",
}


class TablePlacements:
    """Where the GPU launches inside a `with table_placements() as seen:` block put their tables.

    `seen.counts` maps a placement ("by_value", "constant_bank", "global_memory",
    "shared_memory") to its launches, `seen.placement` is the one placement when every launch
    took the same, `seen.captured` counts launches recorded into a CUDA graph (their placement
    is the graph's: by value, or a device buffer), and `seen.stream_buffers` the host tables
    copied into a stream-ordered device buffer (larger than the op's banks). The counters are
    process-wide: launches of other threads in the block count too. A launch counts when the op
    library runs it on the host: under JAX or tf.function, wait for the result inside the block.
    CPU kernels place nothing.
    """

    def __init__(self, read: Callable[[], dict[str, int]]):
        self._read = read
        self._before: dict[str, int] = {}
        self.counts: dict[str, int] = {}
        self.captured = 0
        self.stream_buffers = 0

    def __enter__(self) -> TablePlacements:
        self._before = self._read()
        return self

    def __exit__(self, *exc: object) -> None:
        after = self._read()

        def delta(name: str) -> int:
            return after.get(name, 0) - self._before.get(name, 0)

        self.counts = {
            placement: delta(counter)
            for placement, counter in _PLACEMENT_COUNTERS.items()
            if delta(counter) > 0
        }
        self.captured = delta("captured_launch")
        self.stream_buffers = delta("stream_buffer_upload")

    @property
    def placement(self) -> str | None:
        """The placement of every launch in the block, or None where there was none or several."""
        return next(iter(self.counts)) if len(self.counts) == 1 else None

    def __repr__(self) -> str:
        return (
            f"TablePlacements(counts={self.counts}, captured={self.captured}, "
            f"stream_buffers={self.stream_buffers})"
        )


def placements_function(read: Callable[[], dict[str, int]]) -> Callable[[], TablePlacements]:
    """table_placements() of a framework module whose counters `read` returns."""

    def table_placements() -> TablePlacements:
        """A context manager that says where the GPU launches inside it put their tables.

        `with table_placements() as seen: y = op(...)`, then `seen.placement` ("by_value",
        "constant_bank", "global_memory" or "shared_memory") and `seen.counts` (TablePlacements).
        """
        return TablePlacements(read)

    return table_placements


def placement_function(path: str, ops: dict) -> Callable[..., str | None]:
    """placement_of() of a framework module whose op library is at `path` (its ops `ops`)."""
    import ctypes

    from constmem import _registry

    library = ctypes.CDLL(path)
    find = getattr(library, "constmem_op_registry_table_placement", None)
    if find is not None:
        find.restype = ctypes.c_char_p
        find.argtypes = (
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_longlong,
            ctypes.c_int,
            ctypes.c_longlong,
        )

    def placement_of(
        op: str,
        entries: int,
        dtype: str = "float32",
        source: str = "device",
        table: str | None = None,
        elements: int | None = None,
    ):
        """Where a GPU launch of `op` would put a table of `entries` entries from `source`.

        "by_value", "constant_bank", "shared_memory" or "global_memory", for data of `dtype` and a
        table on the data's device ("device") or the host ("host"); `table` names one of an op's
        several tables (default: its first); `elements`, the call's output elements (default: a
        large call), where the op reads a small call's device table in place rather than copy it
        into a constant bank. A size outside the table's limits is refused as a call refuses it
        (ValueError). None for a library built without GPU kernels. Asks the op's own
        placement rule, so it answers on a machine without a GPU; `table_placements()` says where
        the launches of a block did put theirs.
        """
        if op not in ops:
            raise ValueError(f"op must be one of {', '.join(sorted(ops))}; got {op!r}")
        if source not in ("device", "host"):
            raise ValueError(f"source must be 'device' or 'host'; got {source!r}")
        if dtype not in ops[op].data_dtypes():
            raise ValueError(_registry.data_dtype_message(ops[op], dtype))
        names = ops[op].table_names
        index = 0 if table is None else names.index(table) if table in names else -1
        if index < 0:
            raise ValueError(f"table must be one of {', '.join(names)}; got {table!r}")
        if isinstance(entries, bool) or not isinstance(entries, numbers.Integral):
            raise ValueError(f"entries must be an int; got {entries!r}")
        _registry.check_size(ops[op].table_spec(index), int(entries))
        if elements is not None and (
            isinstance(elements, bool) or not isinstance(elements, int) or not 0 <= elements < 2**63
        ):
            raise ValueError(
                f"elements must be an int from 0 to 2**63 - 1, or None; got {elements!r}"
            )
        if find is None:
            return None
        launch = -1 if elements is None else elements
        found = find(
            op.encode(), index, dtype.encode(), int(entries), 1 if source == "device" else 0, launch
        )
        return (found or b"").decode() or None

    return placement_of


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


def add_library_functions(module, framework: str, path: str, ops: dict) -> None:
    """Gives the module of an op library of one's own (at `path`) what constmem's own has.

    placement_of, upload_stats, table_placements and library_path, each of that library: its
    counters are its own (CONSTMEM_EXPORT_OP_REGISTRY exports them beside its registry).
    """
    module.placement_of = placement_function(path, ops)
    module.upload_stats, module.library_path = accessors(framework, path)
    module.table_placements = placements_function(module.upload_stats)
    extra = ("library_path", "placement_of", "table_placements", "upload_stats")
    module.__all__ = sorted({*module.__all__, *extra})

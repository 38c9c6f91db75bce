# SPDX-License-Identifier: Apache-2.0
"""constmem: per-call tables in CUDA constant memory for TensorFlow custom ops.

Importing the package loads the op library, so that a SavedModel or graph that uses the ops
loads after `import constmem`, as with any custom-op package.
"""

from constmem import _loader
from constmem._loader import build_info, library_path
from constmem.fir_filter import fir_filter, fir_filter_max_taps
from constmem.frobulate import MAX_TABLE_SIZE, frobulate
from constmem.polyval import polyval, polyval_max_coefficients
from constmem.stats import upload_stats

_loader.ops()

__all__ = [
    "MAX_TABLE_SIZE",
    "build_info",
    "fir_filter",
    "fir_filter_max_taps",
    "frobulate",
    "library_path",
    "polyval",
    "polyval_max_coefficients",
    "upload_stats",
]
__version__: str = build_info().get("constmem", "unknown")
"""pyproject.toml's version, as the op library was built with it."""

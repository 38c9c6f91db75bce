# SPDX-License-Identifier: Apache-2.0
"""constmem's ops for TensorFlow.

Importing this package loads the op library, so that a SavedModel or graph that uses the ops
(`Constmem>Frobulate`, ...) loads after `import constmem.tensorflow`, as with any custom-op
package.
"""

from constmem.tensorflow import _loader
from constmem.tensorflow._loader import build_info, library_path
from constmem.tensorflow._tables import TableOp
from constmem.tensorflow.fir_filter import MAX_TAPS, fir_filter
from constmem.tensorflow.frobulate import MAX_TABLE_SIZE, frobulate
from constmem.tensorflow.interpolate import MAX_KNOTS, interpolate
from constmem.tensorflow.polyval import MAX_COEFFICIENTS, polyval
from constmem.tensorflow.stats import upload_stats

_loader.ops()

# Each op's limit, read from the op library (as in constmem.torch and constmem.jax).
__all__ = [
    "MAX_COEFFICIENTS",
    "MAX_KNOTS",
    "MAX_TABLE_SIZE",
    "MAX_TAPS",
    "TableOp",
    "build_info",
    "fir_filter",
    "frobulate",
    "interpolate",
    "library_path",
    "polyval",
    "upload_stats",
]

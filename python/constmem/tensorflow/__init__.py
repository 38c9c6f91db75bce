# SPDX-License-Identifier: Apache-2.0
"""constmem's ops for TensorFlow.

Importing this package loads the op library, so that a SavedModel or graph that uses the ops
(`Constmem>Frobulate`, ...) loads after `import constmem.tensorflow`, as with any custom-op
package.
"""

from constmem.tensorflow import _loader
from constmem.tensorflow._loader import build_info, library_path
from constmem.tensorflow.fir_filter import fir_filter, fir_filter_max_taps
from constmem.tensorflow.frobulate import MAX_TABLE_SIZE, frobulate
from constmem.tensorflow.polyval import polyval, polyval_max_coefficients
from constmem.tensorflow.stats import upload_stats

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

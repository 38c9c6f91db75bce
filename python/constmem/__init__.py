"""constmem: per-call tables in CUDA constant memory for TensorFlow custom ops.

The op library is loaded on first use of an op, not on import.
"""

from constmem._loader import library_path
from constmem.frobulate import MAX_TABLE_SIZE, frobulate
from constmem.stats import upload_stats

__all__ = ["MAX_TABLE_SIZE", "frobulate", "library_path", "upload_stats"]
__version__ = "0.1.0"

# SPDX-License-Identifier: Apache-2.0
"""constmem's ops for TensorFlow.

Importing this package loads the op library, so that a SavedModel or graph that uses the ops
(`Constmem>Frobulate`, ...) loads after `import constmem.tensorflow`, as with any custom-op
package. Every op of the library's registry has a function here, made from its description
(constmem.ops), with its limit (MAX_TAPS, ...). Each function takes, beyond the op's own
arguments:

- source: how the table reaches the GPU kernel. "input": an ordinary input (small device tables
  read in place, larger ones copied into constant memory); "host": a host-memory input (small
  tables by value, larger ones staged through TensorFlow's pinned allocator); "attr": fixed per
  graph node (exact values in an attr), uploaded at most once per device and content; "auto"
  (default): "attr" for Python or NumPy tables, "input" for a tensor.
- name: the op's name scope.

Bad input raises tf.errors.InvalidArgumentError naming the argument, what it must be and what it
was; a bad `source` raises ValueError.
"""

from __future__ import annotations

import tensorflow as tf

from constmem import _binding, _registry
from constmem.tensorflow import _loader
from constmem.tensorflow._loader import build_info, library_path  # noqa: F401 (in __all__)
from constmem.tensorflow._tables import TableOp
from constmem.tensorflow.stats import upload_stats  # noqa: F401 (in __all__)

_loader.ops()  # TensorFlow loads the library first; the registry is read from the same file
OPS = _registry.read_registry(_loader.library_path())
_TABLE_OPS = {
    name: TableOp(_loader.ops(), spec, _binding.description(spec)) for name, spec in OPS.items()
}
for _op in _TABLE_OPS.values():
    _op.register_gradients()


def _call(spec, data, table, attrs, source, name):
    given = {a.name: v for a, v in zip(spec.attrs, attrs, strict=True)}
    return _TABLE_OPS[spec.name](data, table, given, source=source, name=name)


_FORMS = """
A table may be a tensor (of the op's table dtype) or a Python or NumPy sequence. `source` and
`name` are as for every op of this package (see the package's documentation). Raises
tf.errors.InvalidArgumentError for bad input, naming the argument.
"""

for _spec in OPS.values():
    globals()[_spec.name] = tf.autograph.experimental.do_not_convert(
        _binding.make_function(
            _spec, _call, extra={"source": "auto", "name": None}, doc_suffix=_FORMS
        )
    )
globals().update(_binding.limits(OPS))

__all__ = sorted(
    ["OPS", "TableOp", "build_info", "library_path", "upload_stats", *OPS, *_binding.limits(OPS)]
)
del _spec, _op

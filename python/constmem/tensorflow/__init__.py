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

from collections.abc import Mapping
from types import ModuleType

import tensorflow as tf

from constmem import _binding, _libraries, _registry
from constmem.tensorflow import _loader
from constmem.tensorflow._loader import build_info, library_path  # noqa: F401 (in __all__)
from constmem.tensorflow._tables import TableOp, TfArrays
from constmem.tensorflow.stats import table_placements, upload_stats  # noqa: F401 (in __all__)


def _register(library, path: str, described: Mapping[str, ModuleType] | None):
    ops = _registry.read_registry(path)
    described = _binding.descriptions_of(ops, described)
    table_ops = {name: TableOp(library, spec, described[name]) for name, spec in ops.items()}
    for op in table_ops.values():
        op.register_gradients()
    return ops, described, table_ops


def _make_call(table_ops):
    def make_call(spec, description):
        op = table_ops[spec.name]
        run = op.call_tables if spec.several_tables else op.call_one

        def call(spec, data, table, attrs, source, name):
            given = {a.name: v for a, v in zip(spec.attrs, attrs, strict=True)}
            return run(data, table, given, source=source, name=name)

        return call

    return make_call


_FORMS = """
A table may be a tensor (of the op's table dtype) or a Python or NumPy sequence. `source` and
`name` are as for every op of this package (see the package's documentation); an op with several
tables takes them all in one form. Raises tf.errors.InvalidArgumentError for bad input, naming the
argument.
"""
_EXTRA = {"source": "auto", "name": None}


def _functions(name: str, path: str, ops, described, table_ops) -> ModuleType:
    module = _binding.namespace(
        name,
        ops,
        described,
        _make_call(table_ops),
        extra=_EXTRA,
        doc_suffix=_FORMS,
        arrays=lambda op: TfArrays(table_ops[op], {}),
    )
    for op in ops:
        setattr(module, op, tf.autograph.experimental.do_not_convert(getattr(module, op)))
    module.placement_of = _libraries.placement_function(path, ops)
    module.__all__ = sorted([*module.__all__, "placement_of"])
    return module


def load_library(path: str, descriptions: Mapping[str, ModuleType]) -> ModuleType:
    """The ops of an op library of one's own, built on constmem (constmem_add_tf_op_library).

    Loads it with `tf.load_op_library`, registers each op's gradients from `descriptions` (each
    op's Python description, by name) and returns a module with a function per op, as this
    package has for constmem's own. Its registry is `constmem_op_registry`.
    """
    library = tf.load_op_library(path)
    ops, described, table_ops = _register(library, path, descriptions)
    module = _functions(path, path, ops, described, table_ops)
    _libraries.add_library_functions(module, "tensorflow", path, ops)
    return module


_loader.ops()  # TensorFlow loads the library first; the registry is read from the same file
OPS, _DESCRIBED, _TABLE_OPS = _register(_loader.ops(), _loader.library_path(), None)
_OWN = _functions(__name__, _loader.library_path(), OPS, _DESCRIBED, _TABLE_OPS)
globals().update({name: getattr(_OWN, name) for name in _OWN.__all__})

__all__ = sorted(
    [
        "TableOp",
        "build_info",
        "library_path",
        "load_library",
        "table_placements",
        "upload_stats",
        *_OWN.__all__,
    ]
)

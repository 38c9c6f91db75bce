# SPDX-License-Identifier: Apache-2.0
"""What every framework package makes alike from an op library: its ops' public functions.

Each op's function has the parameters its Python description names (constmem.ops) and calls the
framework's `call(spec, data, table, attrs, *extra)` with the attributes in the registry's order
(and for an op with several tables, `table` the tuple of them in the registry's order).
The function is written out as Python (as dataclasses writes its methods), so that a call costs
no argument binding and torch.compile and jax.jit trace it as plain code. Imports no framework.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from constmem import ops as descriptions
from constmem._registry import OpSpec

Descriptions = Mapping[str, ModuleType]


def descriptions_of(ops: Mapping[str, OpSpec], given: Descriptions | None) -> dict[str, ModuleType]:
    """Each op's Python description, from `given` or else constmem's (constmem.ops).

    An op the registry lists without a description is an error that names it.
    """
    found = {}
    for name in ops:
        if given is None:
            found[name] = descriptions.describe(name)
        elif name in given:
            found[name] = given[name]
        else:
            raise ImportError(f"the op library lists the op {name!r}, but no description was given")
    return found


def make_function(
    spec: OpSpec,
    description: ModuleType,
    call: Callable[..., Any],
    extra: dict[str, Any] | None = None,
    doc_suffix: str = "",
) -> Callable[..., Any]:
    """The public function of `spec`'s op: its description's signature, then `extra` keywords.

    `extra` maps further keyword-only parameters to their defaults; their values follow the
    attributes in the call.
    """
    defaults = dict(getattr(description, "DEFAULTS", {}))
    for attr in spec.attrs:
        if attr.name not in description.SIGNATURE and attr.name not in defaults:
            raise TypeError(f"{spec.name}: attribute {attr.name} has neither a place nor a default")
    names = [*description.SIGNATURE, *defaults, *(extra or {})]
    if any(not n.isidentifier() or keyword.iskeyword(n) for n in names):
        raise TypeError(f"{spec.name}: a parameter is not an identifier: {names}")
    keywords = [f"{n}=_defaults[{n!r}]" for n in defaults] + [
        f"{n}=_extra[{n!r}]" for n in (extra or {})
    ]
    parameters = ", ".join([*description.SIGNATURE, *(["*", *keywords] if keywords else [])])
    attrs = "".join(f"{a.name}, " for a in spec.attrs)
    tail = "".join(f", {n}" for n in (extra or {}))
    # An op with several tables passes them as a tuple, in their order.
    tables = f"({', '.join(spec.table_names)},)" if spec.several_tables else spec.table
    source = (
        f"def {spec.name}({parameters}):\n"
        f"    return _call(_spec, {spec.data}, {tables}, ({attrs}){tail})\n"
    )
    scope = {"_call": call, "_spec": spec, "_defaults": defaults, "_extra": dict(extra or {})}
    exec(source, scope)
    function = scope[spec.name]
    function.__doc__ = description.DOC + doc_suffix
    function.__qualname__ = spec.name
    return function


def namespace(
    name: str,
    ops: Mapping[str, OpSpec],
    described: Mapping[str, ModuleType],
    make_call: Callable[[OpSpec, ModuleType], Callable[..., Any]],
    extra: dict[str, Any] | None = None,
    doc_suffix: str = "",
    arrays: Callable[[str], Any] | None = None,
) -> ModuleType:
    """A module of the ops' functions, their limits and OPS, the registry.

    Each op's limit is under the name its description's LIMIT gives (MAX_TAPS), where it gives one.
    `arrays(op)`: the framework's array namespace F (constmem.ops.ARRAY_API) for the op named,
    which the functions built on the ops take as `ops._arrays`.
    """
    module = ModuleType(name)
    module.OPS = dict(ops)
    module._arrays = arrays
    for op, spec in ops.items():
        call = make_call(spec, described[op])
        function = make_function(spec, described[op], call, extra, doc_suffix)
        setattr(module, op, function)
        limit = getattr(described[op], "LIMIT", None)
        if limit:
            setattr(module, limit, spec.max_table)
    # Functions built on the ops (gaussian_blur on a separable filter, resample on upfirdn): each
    # description's FUNCTIONS maps a name to a maker, given the module of this framework's ops. A
    # function of the op's own name takes its place (the op's, with options of the function's).
    for op in ops:
        for name, make in getattr(described[op], "FUNCTIONS", {}).items():
            setattr(module, name, make(module))
    module.__all__ = sorted(n for n in vars(module) if not n.startswith("_"))
    return module

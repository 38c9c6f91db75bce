# SPDX-License-Identifier: Apache-2.0
"""What every framework package makes alike from an op library: its ops' public functions.

Each op's function has the parameters its Python description names (constmem.ops) and calls the
framework's `call(spec, data, table, attrs, *extra)` with the attributes in the registry's order.
The function is written out as Python (as dataclasses writes its methods), so that a call costs
no argument binding and torch.compile and jax.jit trace it as plain code. Imports no framework.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from types import ModuleType
from typing import Any

from constmem import ops as descriptions
from constmem._registry import OpSpec


def make_function(
    spec: OpSpec,
    call: Callable[..., Any],
    extra: dict[str, Any] | None = None,
    doc_suffix: str = "",
) -> Callable[..., Any]:
    """The public function of `spec`'s op: its description's signature, then `extra` keywords.

    `extra` maps further keyword-only parameters to their defaults; their values follow the
    attributes in the call.
    """
    description = descriptions.describe(spec.name)
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
    source = (
        f"def {spec.name}({parameters}):\n"
        f"    return _call(_spec, {spec.data}, {spec.table}, ({attrs}){tail})\n"
    )
    scope = {"_call": call, "_spec": spec, "_defaults": defaults, "_extra": dict(extra or {})}
    exec(source, scope)
    function = scope[spec.name]
    function.__doc__ = description.DOC + doc_suffix
    function.__qualname__ = spec.name
    return function


def limits(ops: dict[str, OpSpec]) -> dict[str, int]:
    """Each op's most table entries, under the constant name its description gives (MAX_TAPS)."""
    return {descriptions.describe(name).LIMIT: spec.max_table for name, spec in ops.items()}


def description(spec: OpSpec) -> ModuleType:
    """The op's Python description."""
    return descriptions.describe(spec.name)

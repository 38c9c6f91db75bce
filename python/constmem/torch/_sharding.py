# SPDX-License-Identifier: Apache-2.0
"""The ops on DTensors: sharding strategies and gradients made from each op's axes.

Each op's description says what every data axis is to it (constmem.ops.Axes); constmem._sharding
plans a call from the data's placements, and this module says it in DTensor's terms. DTensor
offers no halo exchange: a filtered axis (a Halo) split over a mesh dimension is gathered there
(Replicate), as a WHOLE axis is; a BATCH axis keeps its Shard, the result split alike; a table is
replicated, or split as Shard(0) with the data axis whose items own its blocks. Partial inputs are
reduced first. The gradients run the op's formula on each process's shards of the planned layout,
a replicated table's summed over the shards (Partial, then reduced to the table's placements).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from types import ModuleType
from typing import Any

import torch

from constmem import _sharding
from constmem import ops as descriptions
from constmem._registry import OpSpec

_DTENSOR_MODULE = "torch.distributed.tensor"


def is_dtensor(t: Any) -> bool:
    """Whether `t` is a DTensor (never where torch.distributed is not built)."""
    module = sys.modules.get(_DTENSOR_MODULE)
    return module is not None and isinstance(t, module.DTensor)


def replicated_like(table: torch.Tensor, data: Any) -> torch.Tensor:
    """A host table next to DTensor data as a replicated DTensor of the data's mesh, else itself.

    A static table is the same on every process; DTensor refuses a plain tensor beside a DTensor.
    """
    if not is_dtensor(data):
        return table
    from torch.distributed.tensor import DTensor, Replicate

    mesh = data.device_mesh
    return DTensor.from_local(table, mesh, [Replicate()] * mesh.ndim, run_check=False)


def mixed_message(table: str, data_name: str, data: Any) -> str:
    """The refusal of a tensor table that is a DTensor where the data is not, or the other way."""
    if is_dtensor(data):
        return (
            f"{table} must be a DTensor (Replicate, say) or a static table when {data_name} is a "
            "DTensor; got a torch.Tensor"
        )
    return f"{table} is a DTensor: {data_name} must be one too; got a torch.Tensor"


def register(spec: OpSpec, description: ModuleType) -> None:
    """Gives both schemas of the op a DTensor sharding strategy made from its axes."""
    if not torch.distributed.is_available():
        return
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor._op_schema import RuntimeSchemaInfo

    library = getattr(torch.ops, spec.library)
    count = len(spec.tables)
    propagator = DTensor._op_dispatcher.sharding_propagator
    for static in (False, True):
        op = getattr(library, spec.name + ("_static" if static else "")).default
        # The attributes (and a static schema's lists) decide the strategy: part of its cache key.
        first = 1 if static else 1 + count
        propagator.register_op_strategy(
            op,
            partial(_strategy, spec, description, static),
            RuntimeSchemaInfo(static_argnum=first if len(op._schema.arguments) > first else 100),
        )


def mesh_axes(placements, rank: int) -> list[tuple[int, ...]]:
    """For each of a tensor's `rank` axes, the mesh dimensions that Shard it, in mesh order.

    Replicate, Partial and other kinds of sharding split no axis (a call makes them Replicate).
    """
    from torch.distributed.tensor import Shard

    split: list[list[int]] = [[] for _ in range(rank)]
    for dim, placement in enumerate(placements):
        if type(placement) is Shard:
            split[placement.dim % rank].append(dim)
    return [tuple(dims) for dims in split]


def call_plan(description: ModuleType, shape, placements, mesh, sizes, attrs) -> _sharding.Plan:
    """The Plan of a call on data of global `shape` with `placements` over `mesh`."""
    axes = descriptions.axes(description, tuple(shape), tuple(sizes), attrs)
    mesh_sizes = {dim: mesh.size(dim) for dim in range(mesh.ndim)}
    return _sharding.plan(
        axes,
        tuple(shape),
        mesh_axes(placements, len(shape)),
        mesh_sizes,
        halo_exchange=False,
        uneven=True,
    )


def placements(split_axes, ndim: int) -> tuple:
    """Per mesh dimension: Shard(axis) where `split_axes[axis]` holds it, else Replicate."""
    from torch.distributed.tensor import Replicate, Shard

    out = [Replicate()] * ndim
    for axis, dims in enumerate(split_axes):
        for dim in dims:
            out[dim] = Shard(axis)
    return tuple(out)


def _plan_placements(plan: _sharding.Plan, given, mesh) -> tuple[tuple, list[tuple]]:
    """(the data's and the result's placements, each table's) that `plan` runs the call on.

    A mesh dimension of one device splits nothing: there the data keeps the Shard it was `given`
    (a 1-device mesh runs as a larger one, its placements unchanged).
    """
    from torch.distributed.tensor import Shard

    data = list(placements(plan.data, mesh.ndim))
    for dim, placement in enumerate(given):
        if mesh.size(dim) == 1 and type(placement) is Shard:
            data[dim] = placement
    tables = [placements([dims], mesh.ndim) for dims in plan.tables]
    return tuple(data), tables


def _strategy(spec: OpSpec, description: ModuleType, static: bool, op_schema):
    """The one OpStrategy of a call: the inputs redistributed as its plan says."""
    from torch.distributed.tensor._dtensor_spec import DTensorSpec
    from torch.distributed.tensor._op_schema import OpSpec as Strategy
    from torch.distributed.tensor._op_schema import OpStrategy
    from torch.distributed.tensor._ops.utils import generate_redistribute_costs

    count = len(spec.tables)
    args = op_schema.args_schema
    data = args[0]
    tables = args[1 : 1 + count]
    attrs = {a.name: v for a, v in zip(spec.attrs, args[1 + count :], strict=True)}
    sizes = [len(t) if static else t.shape[0] for t in tables]
    data_spec = data.strategies[0].output_spec
    mesh = data_spec.mesh
    plan = call_plan(description, data.shape, data_spec.placements, mesh, sizes, attrs)
    data_placements, table_placements = _plan_placements(plan, data_spec.placements, mesh)
    inputs = [DTensorSpec(mesh, data_placements, tensor_meta=data_spec.tensor_meta)]
    sources = [data]
    if not static:
        for table, table_placement in zip(tables, table_placements, strict=True):
            source = table.strategies[0].output_spec
            inputs.append(DTensorSpec(mesh, table_placement, tensor_meta=source.tensor_meta))
            sources.append(table)
    costs = [generate_redistribute_costs(s, i) for s, i in zip(sources, inputs, strict=True)]
    output = DTensorSpec(mesh, data_placements)
    return OpStrategy([Strategy(output, input_specs=inputs, redistribute_cost=costs)])


def sharded_gradients(
    gradients: Callable,
    description: ModuleType,
    data,
    tables: tuple,
    grad,
    attrs: dict,
) -> tuple:
    """(grad_data, grad_tables) of a call on DTensor data, by `gradients` run shard by shard.

    `gradients(data, tables, grad)` computes them on plain tensors. Each process runs it on its
    shards of the call's plan: the data's gradient is split as the data was, a table's too where
    it was split with the data, and summed over the shards (Partial) where it was replicated.
    Each gradient then takes its input's placements. A static table is a list, replicated.
    """
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

    mesh = data.device_mesh
    sizes = [len(t) if isinstance(t, list | tuple) else t.shape[0] for t in tables]
    plan = call_plan(description, data.shape, data.placements, mesh, sizes, attrs)
    data_placements, table_placements = _plan_placements(plan, data.placements, mesh)

    def local(t, target):
        if not is_dtensor(t):
            return t
        return t.redistribute(mesh, target).to_local()

    local_tables = tuple(local(t, p) for t, p in zip(tables, table_placements, strict=True))
    grad_data, grad_tables = gradients(
        local(data, data_placements), local_tables, local(grad, data_placements)
    )
    if grad_data is not None:
        grad_data = DTensor.from_local(
            grad_data, mesh, data_placements, shape=data.shape, stride=data.stride()
        ).redistribute(mesh, _unreduced(data.placements))
    out = []
    for g, table, table_placement in zip(grad_tables, tables, table_placements, strict=True):
        if g is None:  # a static table's (a list's) gradient is never asked
            out.append(None)
            continue
        summed = [
            p if type(p) is Shard else Partial() if type(d) is Shard else Replicate()
            for p, d in zip(table_placement, data_placements, strict=True)
        ]
        g = DTensor.from_local(g, mesh, summed, shape=table.shape, stride=table.stride())
        out.append(g.redistribute(mesh, _unreduced(table.placements)))
    return grad_data, out


def _unreduced(placements) -> list:
    """A gradient's placements for an input of `placements`: a Partial input's is Replicate."""
    from torch.distributed.tensor import Replicate

    return [Replicate() if p.is_partial() else p for p in placements]

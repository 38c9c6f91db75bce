# SPDX-License-Identifier: Apache-2.0
"""The ops' custom calls on sharded arrays, from their descriptions' axes (constmem._sharding).

`sharded(local, axes)` wraps a function of the data and its jax.Array tables (one custom call)
so that a call on sharded arrays runs shard by shard as `constmem._sharding.plan` says: a BATCH
axis keeps its split with no collective, a Halo axis keeps it and each shard takes its
neighbours' slices by collective permutes (the border's at the array's ends), a WHOLE axis (or a
halo that does not fit) is gathered. Under JAX's partitioner (a mesh of Auto axes: Shardy or
GSPMD) it is a `custom_partitioning` with a Shardy sharding rule; on a mesh of Explicit axes the
data's type carries its sharding and the call is a `shard_map` of the same per-shard function.
Inside a `shard_map` (every mesh axis manual) the call is the plain local one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from constmem import _sharding
from constmem.ops import WHOLE, Axes, Halo


def _split_of(spec: P, ndim: int) -> tuple:
    """A PartitionSpec as the mesh axes of each of `ndim` axes (a tuple each, () for none)."""
    entries = tuple(spec) + (None,) * (ndim - len(spec))
    out = []
    for entry in entries[:ndim]:
        if entry is None or entry is P.UNCONSTRAINED:
            out.append(())
        elif isinstance(entry, str):
            out.append((entry,))
        else:
            out.append(tuple(entry))
    return tuple(out)


def _spec(split: Sequence[tuple]) -> P:
    return P(*(None if not names else names[0] if len(names) == 1 else names for names in split))


def _border_slices(x, axis: int, count: int, border: str, before: bool):
    """The `count` slices the border gives past one end of `x` along `axis` (x's own slices)."""
    n = x.shape[axis]
    if border == "zeros":
        shape = list(x.shape)
        shape[axis] = count
        return jnp.zeros(shape, x.dtype)
    if border == "replicate":
        end = (
            jax.lax.slice_in_dim(x, 0, 1, axis=axis)
            if before
            else (jax.lax.slice_in_dim(x, n - 1, n, axis=axis))
        )
        return jnp.repeat(end, count, axis=axis)
    # reflect-101: ... 2 1 | 0 1 2 ... and ... n-3 n-2 | n-1 n-2 ...
    indices = range(count, 0, -1) if before else range(n - 2, n - 2 - count, -1)
    return jnp.take(x, jnp.asarray(list(indices)), axis=axis)


def _widen(x, axis: int, halo: Halo, names: tuple, count: int):
    """X's shard widened along `axis` by its neighbours' slices, the border's at the ends."""
    n = x.shape[axis]
    index = jax.lax.axis_index(names)
    parts = []
    if halo.before:
        last = jax.lax.slice_in_dim(x, n - halo.before, n, axis=axis)
        got = jax.lax.ppermute(last, names, [(i, i + 1) for i in range(count - 1)])
        edge = _border_slices(x, axis, halo.before, halo.border, True)
        parts.append(got if halo.border == "zeros" else jnp.where(index == 0, edge, got))
    parts.append(x)
    if halo.after:
        first = jax.lax.slice_in_dim(x, 0, halo.after, axis=axis)
        got = jax.lax.ppermute(first, names, [(i + 1, i) for i in range(count - 1)])
        edge = _border_slices(x, axis, halo.after, halo.border, False)
        parts.append(got if halo.border == "zeros" else jnp.where(index == count - 1, edge, got))
    return jnp.concatenate(parts, axis=axis)


def output_axes(axes: Axes, ranks: Sequence[int] | None) -> tuple | None:
    """For each of several outputs (of `ranks`), the data's axis each of its axes follows or None.

    None for an op of one output, whose result's axis i follows the data's axis i.
    """
    if ranks is None:
        return None
    if axes.outputs:
        if [len(o) for o in axes.outputs] != list(ranks):
            raise ValueError(
                f"axes gave outputs of ranks {[len(o) for o in axes.outputs]} for outputs of "
                f"ranks {list(ranks)}"
            )
        return tuple(tuple(o) for o in axes.outputs)
    ndim = len(axes.data)
    return tuple(tuple(k if k < ndim else None for k in range(rank)) for rank in ranks)


def _per_shard(
    local: Callable, plan: _sharding.Plan, mesh_sizes: dict, outputs: tuple | None = None
) -> Callable:
    """The function each shard runs: widen each Halo axis, run the op, keep the middle.

    `outputs`: output_axes for an op of several outputs, each cut along the axes that follow a
    Halo axis.
    """

    def middle(out, follows):
        for axis, data_axis in enumerate(follows):
            halo = None if data_axis is None else plan.halos[data_axis]
            if halo is not None:
                size = out.shape[axis] - halo.before - halo.after
                out = jax.lax.slice_in_dim(out, halo.before, halo.before + size, axis=axis)
        return out

    def run(data, *tables):
        for axis, halo in enumerate(plan.halos):
            if halo is not None:
                names = plan.data[axis]
                data = _widen(data, axis, halo, names, _sharding.shard_count(names, mesh_sizes))
        out = local(data, *tables)
        if outputs is not None:
            return tuple(middle(o, f) for o, f in zip(out, outputs, strict=True))
        return middle(out, range(len(plan.halos)))

    return run


def sharding_rule(
    axes: Axes, shape: Sequence[int], table_sizes: Sequence[int], outputs: tuple | None = None
) -> tuple:
    """The Shardy rule of a call: (einsum-like string, need-replication factors, factor sizes).

    `table_sizes`: each table operand's size (none where the tables are attributes). `outputs`:
    output_axes for an op of several outputs.

    A BATCH or Halo axis is one factor of the data and the result (`d<i>`); a WHOLE axis is a
    factor of each (`w<i>`, `r<i>`) that is never split; a replicated table one never split
    (`t<j>`); a table of blocks is its owners' factors and a block factor (`(d<i> ... b<j>)`).
    Each of several outputs has `d<i>` where its axis follows a split axis i, else a factor of
    its own never split (`o<j>a<k>`).
    """
    data = [f"w{i}" if role == WHOLE else f"d{i}" for i, role in enumerate(axes.data)]
    result = [f"r{i}" if role == WHOLE else f"d{i}" for i, role in enumerate(axes.data)]
    if outputs is not None:
        results = [
            [
                f"o{j}a{k}" if i is None or axes.data[i] == WHOLE else f"d{i}"
                for k, i in enumerate(follows)
            ]
            for j, follows in enumerate(outputs)
        ]
    replicated = [f for f in data if f[0] == "w"]  # in the order the factors first appear
    sizes = {}
    tables = []
    owned = axes.tables if table_sizes else ()
    for j, (owners, size) in enumerate(zip(owned, table_sizes, strict=True)):
        if not owners:
            tables.append(f"t{j}")
            replicated.append(f"t{j}")
            continue
        block = size // math.prod(shape[i] for i in owners)
        factors = [f"d{i}" for i in owners]
        if block > 1:
            factors.append(f"b{j}")
            sizes[f"b{j}"] = block
        tables.append(factors[0] if len(factors) == 1 else "(" + " ".join(factors) + ")")
    operands = ", ".join([" ".join(data), *tables])
    if outputs is not None:
        replicated += [f for r in results for f in r if f[0] == "o"]
        return f"{operands} -> {', '.join(' '.join(r) for r in results)}", tuple(replicated), sizes
    replicated += [f for f in result if f[0] == "r"]
    return f"{operands} -> {' '.join(result)}", tuple(replicated), sizes


def _replicated(mesh, ndim: int) -> NamedSharding:
    return NamedSharding(mesh, P(*(None,) * ndim))


def _explicit_names(sharding) -> frozenset:
    """The Explicit mesh axes of an array's type (its sharding is then part of the type)."""
    mesh = getattr(sharding, "mesh", None)
    if mesh is None or mesh.empty:
        return frozenset()
    return frozenset(
        name
        for name, kind in zip(mesh.axis_names, mesh.axis_types, strict=True)
        if kind == AxisType.Explicit
    )


def sharded(
    local: Callable,
    axes: Axes,
    shape: Sequence[int],
    sizes: Sequence[int],
    static: tuple | None = None,
    ranks: Sequence[int] | None = None,
) -> Callable:
    """`local(data, *tables)` (one custom call) made to run shard by shard on sharded arrays.

    `axes`: the call's Axes for data of `shape`; `sizes`: each table's size. Where the tables
    are attributes of the call (`local(data)`), `static` is `(array_local, tables)`: the same op
    with array tables and the tables as NumPy arrays, for shards that take a block of a split
    table. `ranks`: each output's rank, for an op of several outputs (a tuple of results).
    """
    ndim = len(shape)
    outputs = output_axes(axes, ranks)

    def result_specs(data_spec: tuple) -> P | tuple:
        """The result's PartitionSpec (each output's) from the data's split of each axis."""
        if outputs is None:
            return _spec(data_spec)
        return tuple(
            _spec([() if i is None else data_spec[i] for i in follows]) for follows in outputs
        )

    def result_shardings(mesh, data_spec: tuple):
        specs = result_specs(data_spec)
        if outputs is None:
            return NamedSharding(mesh, specs)
        return tuple(NamedSharding(mesh, s) for s in specs)

    def replicated_result(mesh):
        return result_shardings(mesh, ((),) * ndim)

    def per_shard(plan: _sharding.Plan, mesh_sizes: dict) -> Callable:
        if static is None or not any(plan.tables):
            return _per_shard(local, plan, mesh_sizes, outputs)
        array_local, values = static

        def with_blocks(data):
            blocks = []
            for names, table in zip(plan.tables, values, strict=True):
                count = _sharding.shard_count(names, mesh_sizes)
                size = table.shape[0] // count
                start = jax.lax.axis_index(names) * size if names else 0
                blocks.append(jax.lax.dynamic_slice_in_dim(jnp.asarray(table), start, size))
            return array_local(data, *blocks)

        return _per_shard(with_blocks, plan, mesh_sizes, outputs)

    def planned(mesh, data_sharding) -> _sharding.Plan:
        split = _split_of(data_sharding.spec, ndim)
        return _sharding.plan(axes, shape, split, dict(mesh.shape))

    def shardings(mesh, plan: _sharding.Plan, operands: int) -> tuple:
        data = NamedSharding(mesh, _spec(plan.data))
        tables = tuple(NamedSharding(mesh, _spec([names])) for names in plan.tables)
        return result_shardings(mesh, plan.data), (data, *tables[: operands - 1])

    def partition(mesh, arg_shapes, result_shape):
        data_sharding = arg_shapes[0].sharding
        if not isinstance(data_sharding, NamedSharding):  # no mesh to name: run it whole
            args = tuple(_replicated(mesh, len(a.shape)) for a in arg_shapes)
            return mesh, local, replicated_result(mesh), args
        plan = planned(mesh, data_sharding)
        result, args = shardings(mesh, plan, len(arg_shapes))
        return mesh, per_shard(plan, dict(mesh.shape)), result, args

    def infer(mesh, arg_shapes, result_shape):
        data_sharding = arg_shapes[0].sharding
        if not isinstance(data_sharding, NamedSharding):
            return replicated_result(mesh)
        return shardings(mesh, planned(mesh, data_sharding), len(arg_shapes))[0]

    def propagate(mesh, user_shape):
        user = user_shape.sharding if outputs is None else None
        if not isinstance(user, NamedSharding):  # several outputs: GSPMD's guess, replicated
            return user if outputs is None else replicated_result(mesh)
        split = _split_of(user.spec, ndim)
        roles = zip(axes.data, split, strict=True)
        return NamedSharding(mesh, _spec([() if r == WHOLE else names for r, names in roles]))

    rule, replicated, factor_sizes = sharding_rule(
        axes, shape, sizes if static is None else (), outputs
    )
    partitioned = custom_partitioning(local)
    partitioned.def_partition(
        partition,
        infer_sharding_from_operands=infer,
        propagate_user_sharding=propagate,
        sharding_rule=rule,
        need_replication_factors=replicated,
        **factor_sizes,
    )

    def call(data, *tables):
        typed = jax.typeof(data).sharding
        explicit = _explicit_names(typed)
        if not explicit or not any(_split_of(typed.spec, ndim)):
            return partitioned(data, *tables)
        # Explicit axes: the plan's shardings made by reshard, the shards run under shard_map.
        mesh = typed.mesh
        plan = planned(mesh, typed)
        if any(n not in explicit for names in plan.data for n in names):
            return partitioned(data, *tables)
        specs = [_spec(plan.data), *(_spec([names]) for names in plan.tables[: len(tables)])]
        operands = [
            jax.sharding.reshard(a, NamedSharding(mesh, s))
            for a, s in zip((data, *tables), specs, strict=True)
        ]
        run = jax.shard_map(
            per_shard(plan, dict(mesh.shape)),
            mesh=mesh,
            in_specs=tuple(specs),
            out_specs=result_specs(plan.data),
            axis_names=explicit,
            check_vma=False,
        )
        return run(*operands)

    return call

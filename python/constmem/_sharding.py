# SPDX-License-Identifier: Apache-2.0
"""How a call of an op on sharded data runs shard by shard, from its description's axes.

JAX's partitioner (constmem.jax) and PyTorch's DTensor (constmem.torch) both ask `plan` which of
the data's shardings a call keeps, what each shard reads beyond its own slices, and how its
tables are split; each then does it in its own terms. Imports no framework.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from constmem.ops import BATCH, WHOLE, Axes, Halo


class Plan(NamedTuple):
    """A call's sharding, axis by axis.

    `data`: for each of the data's axes, the mesh axes it stays split over (() where it is
    gathered); the result is split alike (every op keeps the data's rank). `halos`: for each
    axis, the Halo each shard is widened by (None where it reads nothing beyond its slices).
    `tables`: for each table, the mesh axes it is split over (() where every shard reads it all).
    """

    data: tuple
    halos: tuple
    tables: tuple

    @property
    def result(self) -> tuple:
        """The result's split, axis by axis: the data's."""
        return self.data


def shard_count(mesh_axes: Sequence[str], mesh: Mapping[str, int]) -> int:
    """How many shards `mesh_axes` of `mesh` (sizes by name) split an axis into."""
    return math.prod(mesh[name] for name in mesh_axes)


def halo_fits(halo: Halo, local: int) -> bool:
    """Whether a shard of `local` slices can take its Halo from its neighbours and the border.

    Each neighbour gives at most its own slices; reflect-101 reads up to `before` slices past the
    array's first, which the first shard holds only when it has more than that.
    """
    reach = max(halo.before, halo.after)
    return reach <= local - (1 if halo.border == "reflect" else 0)


def plan(
    axes: Axes,
    shape: Sequence[int],
    sharding: Sequence[Sequence[str] | None],
    mesh: Mapping[str, int],
    halo_exchange: bool = True,
    uneven: bool = False,
) -> Plan:
    """How a call on data of `shape` split by `sharding` runs shard by shard.

    `sharding`: for each axis, the mesh axes that split it, major first (None or () where none
    does); `mesh`: each mesh axis's size. A BATCH axis keeps its split; a Halo axis keeps it with
    each shard widened by the Halo where `halo_exchange` is offered and the shards are long enough
    (else it is gathered); a WHOLE axis is gathered. An axis that does not split evenly is
    gathered, but for a BATCH axis whose items own no table's blocks where `uneven` is offered
    (DTensor's shards may differ in size). A table of per-item blocks (Axes.tables) is split as
    the first of the axes whose items own its blocks; the others of them are then gathered, so
    that each shard's blocks are contiguous.
    """
    if len(sharding) != len(shape) or len(axes.data) != len(shape):
        raise ValueError(
            f"a sharding of {len(sharding)} axes and {len(axes.data)} roles for data of rank "
            f"{len(shape)}"
        )
    owners = {axis for axes_of in axes.tables for axis in axes_of or ()}
    kept, halos = [], []
    for axis, (role, size, split) in enumerate(zip(axes.data, shape, sharding, strict=True)):
        if role not in (BATCH, WHOLE) and not isinstance(role, Halo):
            raise ValueError(f"an axis's role must be BATCH, WHOLE or a Halo; got {role!r}")
        split = tuple(split or ())
        count = shard_count(split, mesh)
        halo = None
        if count > 1 and size % count and not (uneven and role == BATCH and axis not in owners):
            split = ()
        elif count > 1 and role == WHOLE:
            split = ()
        elif count > 1 and isinstance(role, Halo) and role.before + role.after > 0:
            if halo_exchange and halo_fits(role, size // count):
                halo = role
            else:
                split = ()
        kept.append(split if count > 1 else ())
        halos.append(halo)
    for owners in axes.tables:
        for axis in (owners or ())[1:]:  # a split after the first interleaves the blocks
            kept[axis], halos[axis] = (), None
    tables = tuple(tuple(kept[owners[0]]) if owners else () for owners in axes.tables)
    return Plan(tuple(kept), tuple(halos), tables)

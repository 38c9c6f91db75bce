# SPDX-License-Identifier: Apache-2.0
"""The sharding plan (constmem._sharding) made from each op's axes, without a framework."""

import pytest
from constmem import _sharding
from constmem import ops as descriptions
from constmem.ops import BATCH, WHOLE, Axes, Halo

MESH = {"b": 2, "x": 4}


def _axes(op, shape, sizes, **attrs):
    description = descriptions.describe(op)
    merged = {**getattr(description, "DEFAULTS", {}), **attrs}
    return descriptions.axes(description, shape, sizes, merged)


def test_elementwise_ops_keep_every_split():
    for op in ("frobulate", "polyval", "interpolate"):
        axes = _axes(op, (8, 4, 6), 3, lo=0.0, hi=1.0)
        assert axes == Axes((BATCH, BATCH, BATCH), (None,))
        plan = _sharding.plan(axes, (8, 4, 6), (("b",), None, ("x",)), MESH)
        assert plan.data == (("b",), (), ())  # 6 does not split in 4: gathered
        assert plan.tables == ((),)
        assert plan.halos == (None, None, None)


@pytest.mark.parametrize("k", [1, 2, 5, 8])
def test_fir_filter_same_is_a_zero_halo_of_its_taps(k):
    axes = _axes("fir_filter", (8, 64), k, padding="SAME")
    before = (k - 1) // 2
    assert axes.data == (BATCH, Halo(before, k - 1 - before, "zeros"))
    plan = _sharding.plan(axes, (8, 64), (("b",), ("x",)), MESH)
    assert plan.data == (("b",), ("x",))
    assert plan.halos == (None, Halo(before, k - 1 - before, "zeros") if k > 1 else None)


def test_a_halo_longer_than_a_shard_gathers_the_axis():
    axes = _axes("fir_filter", (8, 16), 11, padding="SAME")  # 5 before, 5 after; shards of 4
    plan = _sharding.plan(axes, (8, 16), (("b",), ("x",)), MESH)
    assert plan.data == (("b",), ())
    assert plan.halos == (None, None)
    # Without halo exchange (DTensor) the filtered axis is gathered whatever its length.
    plan = _sharding.plan(_axes("fir_filter", (8, 64), 3), (8, 64), (("b",), ("x",)), MESH, False)
    assert plan.data == (("b",), ())


def test_reflect_needs_one_slice_more_than_its_reach():
    assert _sharding.halo_fits(Halo(2, 2, "zeros"), 2)
    assert _sharding.halo_fits(Halo(2, 2, "replicate"), 2)
    assert not _sharding.halo_fits(Halo(2, 2, "reflect"), 2)
    assert _sharding.halo_fits(Halo(2, 2, "reflect"), 3)


def test_valid_and_upfirdn_read_their_axis_whole():
    assert _axes("fir_filter", (8, 64), 5, padding="VALID").data == (BATCH, WHOLE)
    assert _axes("upfirdn", (2, 8, 64), 5, up=3, down=2).data == (BATCH, BATCH, WHOLE)
    plan = _sharding.plan(_axes("upfirdn", (8, 64), 5), (8, 64), (("b",), ("x",)), MESH)
    assert plan.data == (("b",), ())


def test_separable_filter_axes_follow_the_layout_and_per_image_taps():
    first = _axes("separable_filter", (2, 4, 3, 32, 48), (5, 3), border="replicate")
    assert first.data == (BATCH, BATCH, BATCH, Halo(1, 1, "replicate"), Halo(2, 2, "replicate"))
    assert first.tables == (None, None)
    last = _axes("separable_filter", (4, 32, 48, 3), (5, 3), layout="channels_last")
    assert last.data == (BATCH, Halo(1, 1, "reflect"), Halo(2, 2, "reflect"), BATCH)
    per_image = _axes("separable_filter", (2, 4, 3, 32, 48), (40, 24), taps="per_image")
    assert per_image.data[3:] == (Halo(1, 1, "reflect"), Halo(2, 2, "reflect"))
    assert per_image.tables == ((0, 1), (0, 1))
    # The images' first axis splits the tables with it; the second would interleave their blocks.
    plan = _sharding.plan(per_image, (2, 4, 3, 32, 48), (("b",), ("x",), None, None, None), MESH)
    assert plan.data == (("b",), (), (), (), ())
    assert plan.tables == (("b",), ("b",))


def test_a_table_of_channel_blocks_splits_with_the_channels():
    axes = Axes((BATCH, BATCH, Halo(2, 0)), ((1,), (1,)))  # a causal filter, taps per channel
    plan = _sharding.plan(axes, (4, 8, 64), (("b",), ("x",), None), MESH)
    assert plan.data == (("b",), ("x",), ())
    assert plan.tables == (("x",), ("x",))


def test_an_uneven_split_is_gathered():
    axes = _axes("polyval", (6, 8), 3)
    assert _sharding.plan(axes, (6, 8), (("x",), ("b",)), MESH).data == ((), ("b",))


def test_uneven_keeps_a_batch_split_that_owns_no_blocks():
    # DTensor's shards may differ in size: rows keep their split, the filtered axis does not.
    axes = _axes("fir_filter", (6, 10), 3)
    plan = _sharding.plan(axes, (6, 10), (("x",), ("b",)), MESH, False, uneven=True)
    assert plan.data == (("x",), ())
    # A block table splits its entries in other sizes than its items: that axis is gathered.
    axes = Axes((BATCH, BATCH, Halo(2, 0)), ((1,), (1,)))
    plan = _sharding.plan(axes, (6, 5, 64), (("x",), ("b",), None), MESH, uneven=True)
    assert plan.data == (("x",), (), ())
    assert plan.tables == ((), ())


def test_a_bad_rule_is_refused_by_name():
    with pytest.raises(ValueError, match="role"):
        _sharding.plan(Axes(("rows",), (None,)), (4,), (("b",),), MESH)
    with pytest.raises(ValueError, match="rank 2"):
        _sharding.plan(Axes((BATCH,), (None,)), (4, 4), (None, None), MESH)

# SPDX-License-Identifier: Apache-2.0
"""constmem's JAX ops on sharded arrays, each against the unsharded call. Prints one RESULT line.

Runs on the devices JAX sees: 8 simulated CPU devices where XLA_FLAGS has
--xla_force_host_platform_device_count=8 before JAX starts (tests/python/test_sharding_jax.py),
meshes of 8 and 4 x 2; or one GPU, meshes of 1 and 1 x 1 (the same code path, no collective).
For each op and sharding: the result is bit for bit the unsharded call's and keeps the sharding
its plan says; the compiled HLO's collectives are none for an independent axis, collective
permutes only (two an axis at most) for a halo axis, an all-gather for an axis read whole; the
per-device memory (arguments, outputs and temporaries) of an independent split is about 1/N of
the unsharded call's. Then gradients, vmap, shard_map and JAX's older partitioner (GSPMD).

    python tests/gpu/sharding_jax.py [--exhaustive] [--verbose]
"""

from __future__ import annotations

import argparse
import re
import sys
import time

import constmem.jax as cm
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

COLLECTIVES = ("all-gather", "collective-permute", "all-reduce", "all-to-all", "reduce-scatter")
FAILURES: list[str] = []
VERBOSE = False
RNG = np.random.default_rng(0)


def collectives(compiled) -> dict:
    """Each collective's count in a compiled executable's HLO (async ones by their start)."""
    text = compiled.as_text()
    return {name: len(re.findall(rf"\b{name}(?:-start)?\(", text)) for name in COLLECTIVES}


def memory(compiled) -> int:
    """Per-device bytes: arguments, outputs and temporaries."""
    stats = compiled.memory_analysis()
    return stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes


def expect(ok: bool, message: str) -> None:
    if not ok:
        FAILURES.append(message)
        print("FAIL", message, flush=True)


def meshes(kinds=(AxisType.Auto,)) -> dict:
    """A 1-D mesh of every device ("a") and a 2-D one ("b" x "c", 4 x 2 on 8) of each kind."""
    n = jax.device_count()
    two = (n // 2, 2) if n >= 4 and n % 2 == 0 else (n, 1)
    found = {}
    for kind in kinds:
        found[("1d", kind)] = jax.make_mesh((n,), ("a",), axis_types=(kind,))
        found[("2d", kind)] = jax.make_mesh(two, ("b", "c"), axis_types=(kind,) * 2)
    return found


def shards(mesh, spec: P) -> int:
    """How many pieces `spec` cuts an array into on `mesh`."""
    count = 1
    for entry in spec:
        for name in (entry,) if isinstance(entry, str) else entry or ():
            count *= mesh.shape[name]
    return count


def check(name, fn, x, tables, mesh, spec, cost, result_spec=None):
    """Runs fn(x, *tables) with x split by `spec` on `mesh` against the call on one device.

    `cost`: "none" (no collective, memory about 1/N), "permute" (collective permutes only) or
    "gather" (all-gathers only). `result_spec`: the result's expected split (default `spec`),
    or a tuple of those allowed.
    """
    label = f"{name} {dict(mesh.shape)} {spec}"
    one = jax.devices()[0]
    local = [jax.device_put(a, one) for a in (x, *tables)]
    single = jax.jit(fn).lower(*local).compile()
    want = np.asarray(single(*local))
    sharded = [jax.device_put(x, NamedSharding(mesh, spec))] + [
        jax.device_put(t, NamedSharding(mesh, P())) for t in tables
    ]
    compiled = jax.jit(fn).lower(*sharded).compile()
    got = compiled(*sharded)
    expect(np.array_equal(np.asarray(got), want, equal_nan=True), f"{label}: not bitwise")
    result_spec = spec if result_spec is None else result_spec
    # A tuple of specs: any of them (Shardy may keep the split of a halo too long for a shard
    # and slice the gathered result back: no collective more).
    allowed = result_spec if isinstance(result_spec, tuple) else (result_spec,)
    expect(
        any(got.sharding.is_equivalent_to(NamedSharding(mesh, s), got.ndim) for s in allowed),
        f"{label}: result split {got.sharding.spec}, expected {result_spec}",
    )
    counts = collectives(compiled)
    n = shards(mesh, spec)
    found = {k: v for k, v in counts.items() if v}
    if cost == "none" or n == 1:
        expect(not found, f"{label}: collectives {found}, expected none")
    elif cost == "permute":
        halo_axes = sum(1 for e in allowed[0] if e)
        ok = set(found) == {"collective-permute"} and found["collective-permute"] <= 2 * halo_axes
        expect(ok, f"{label}: collectives {found}, expected collective permutes only")
    else:
        expect(set(found) == {"all-gather"}, f"{label}: collectives {found}, expected all-gathers")
    ratio = memory(compiled) / memory(single)
    if cost == "none":
        expect(ratio <= 1.25 / n, f"{label}: per-device memory {ratio:.3f} of one device's")
    if VERBOSE:
        print(f"case {label}: {found or 'no collective'}, memory {ratio:.3f}", flush=True)
    return counts, ratio


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


TAPS5 = f32(5)
TAPS3 = f32(3)


def forward_cases(exhaustive: bool):
    """(name, fn, x, tables, mesh key, spec, cost, result spec) for each op and sharding."""
    signal = f32(64, 1024)
    images = f32(8, 2, 64, 64)
    last = f32(8, 64, 64, 2)
    small = (f32(16, 8, 6),)
    per_image_rows = f32(8 * 5)
    per_image_columns = f32(8 * 3)
    cases = [
        ("frobulate", lambda x: cm.frobulate(x, [1, 2, 3]), *small, (), "1d", P("a"), "none"),
        (
            "polyval static",
            lambda x: cm.polyval([0.5, -1.0, 2.0], x),
            signal,
            (),
            "2d",
            P("b", "c"),
            "none",
        ),
        ("polyval array", lambda x, c: cm.polyval(c, x), signal, (TAPS3,), "1d", P("a"), "none"),
        (
            "interpolate",
            lambda x: cm.interpolate(x, [0.0, 1.0, 0.25], lo=-1.0, hi=1.0),
            signal,
            (),
            "1d",
            P(None, "a"),
            "none",
        ),
        ("fir SAME rows", lambda x: cm.fir_filter(x, TAPS5), signal, (), "1d", P("a"), "none"),
        (
            "fir SAME samples",
            lambda x: cm.fir_filter(x, TAPS5),
            signal,
            (),
            "1d",
            P(None, "a"),
            "permute",
        ),
        (
            "fir SAME array 2-D",
            lambda x, t: cm.fir_filter(x, t),
            signal,
            (TAPS5,),
            "2d",
            P("b", "c"),
            "permute",
        ),
        (
            "fir VALID samples",
            lambda x: cm.fir_filter(x, TAPS5, padding="VALID"),
            signal,
            (),
            "1d",
            P(None, "a"),
            "gather",
            P(),
        ),
        (
            "separable images",
            lambda x: cm.separable_filter(x, TAPS5, TAPS3),
            images,
            (),
            "1d",
            P("a"),
            "none",
        ),
        (
            "separable channels",
            lambda x, r, c: cm.separable_filter(x, r, c),
            images,
            (TAPS5, TAPS3),
            "2d",
            P(None, "c"),
            "none",
        ),
        (
            "separable H x W reflect",
            lambda x: cm.separable_filter(x, TAPS5, TAPS3),
            images,
            (),
            "2d",
            P(None, None, "b", "c"),
            "permute",
        ),
        (
            "separable W zeros",
            lambda x: cm.separable_filter(x, TAPS5, TAPS3, border="zeros"),
            images,
            (),
            "1d",
            P(None, None, None, "a"),
            "permute",
        ),
        (
            "separable H replicate channels_last",
            lambda x, r, c: cm.separable_filter(
                x, r, c, border="replicate", layout="channels_last"
            ),
            last,
            (TAPS5, TAPS3),
            "1d",
            P(None, "a"),
            "permute",
        ),
        (
            "separable per-image static",
            lambda x: cm.separable_filter(x, per_image_rows, per_image_columns, taps="per_image"),
            images,
            (),
            "2d",
            P("b", "c"),
            "none",
        ),
        (
            "separable per-image array",
            lambda x, r, c: cm.separable_filter(x, r, c, taps="per_image"),
            images,
            (per_image_rows, per_image_columns),
            "1d",
            P("a"),
            "none",
        ),
        (
            "upfirdn rows",
            lambda x: cm.upfirdn(x, TAPS5, up=3, down=2),
            signal,
            (),
            "1d",
            P("a"),
            "none",
        ),
        (
            "upfirdn samples",
            lambda x: cm.upfirdn(x, TAPS5, up=3, down=2),
            signal,
            (),
            "1d",
            P(None, "a"),
            "gather",
            P(),
        ),
        (
            "gaussian_blur H x W",
            lambda x: cm.gaussian_blur(x, 5, 1.5),
            images,
            (),
            "2d",
            P(None, None, "b", "c"),
            "permute",
        ),
        (
            "resample_poly rows",
            lambda x: cm.resample_poly(x, 3, 2),
            signal,
            (),
            "1d",
            P("a"),
            "none",
        ),
        (
            "resample rows",
            lambda x: cm.resample(x, 16000, 8000),
            signal,
            (),
            "2d",
            P(("b", "c")),
            "none",
        ),
    ]
    if exhaustive:
        uint8 = RNG.integers(0, 256, (8, 2, 64, 64), dtype=np.uint8)
        for border in ("reflect", "zeros", "replicate"):
            for spec in (P(None, None, "a"), P(None, None, None, "a"), P("a", None, None, None)):
                cases.append(
                    (
                        f"separable {border}",
                        lambda x, b=border: cm.separable_filter(x, TAPS5, TAPS3, border=b),
                        images,
                        (),
                        "1d",
                        spec,
                        "none" if spec[0] else "permute",
                    )
                )
            cases.append(
                (
                    f"separable uint8 {border}",
                    lambda x, b=border: cm.separable_filter(x, TAPS5, TAPS3, border=b),
                    uint8,
                    (),
                    "2d",
                    P(None, None, "b", "c"),
                    "permute",
                )
            )
        long_taps, longer_taps = f32(17), f32(301)
        for spec in (P("a"), P(None, "a"), P(("a",), None)):
            cases.append(
                (
                    "fir SAME 17 taps",
                    lambda x: cm.fir_filter(x, long_taps),
                    signal,
                    (),
                    "1d",
                    spec,
                    "none" if spec[0] else "permute",
                )
            )
        cases += [
            (
                "fir SAME 2 taps",
                lambda x: cm.fir_filter(x, TAPS5[:2]),
                signal,
                (),
                "2d",
                P(None, ("b", "c")),
                "permute",
            ),
            (
                "fir SAME halo over a shard",
                # The kernel's own partitioning ("auto" would take the FFT route, XLA's to split).
                lambda x: cm.fir_filter(x, longer_taps, method="direct"),
                signal,
                (),
                "1d",
                P(None, "a"),
                "gather",
                (P(), P(None, "a")),
            ),
            (
                "upfirdn array 2-D",
                lambda x, t: cm.upfirdn(x, t, up=2, down=3),
                signal,
                (TAPS5,),
                "2d",
                P("b", "c"),
                "gather",
                P("b"),
            ),
            (
                "gaussian_blur channels_last",
                lambda x: cm.gaussian_blur(x, (5, 3), (1.0, 2.0), layout="channels_last"),
                last,
                (),
                "2d",
                P(None, "b", "c"),
                "permute",
            ),
            (
                "resample_poly samples",
                lambda x: cm.resample_poly(x, 2, 3),
                signal,
                (),
                "1d",
                P(None, "a"),
                "gather",
                P(),
            ),
            (
                "interpolate 2-D",
                lambda x, k: cm.interpolate(x, k, lo=-2.0, hi=2.0),
                signal,
                (f32(9),),
                "2d",
                P("c", "b"),
                "none",
            ),
        ]
    return cases


def run_forward(all_meshes, exhaustive: bool):
    kinds = sorted({kind for _, kind in all_meshes}, key=str)
    count = 0
    for i, (name, fn, x, tables, key, spec, cost, *result) in enumerate(forward_cases(exhaustive)):
        # Every kind of mesh for each case, or (the default) Auto and Explicit in turn.
        for kind in kinds if exhaustive else kinds[i % len(kinds) :][:1]:
            check(
                f"{name} [{kind.name}]", fn, x, tables, all_meshes[(key, kind)], spec, cost, *result
            )
            count += 1
    return count


def run_gradients(mesh):
    """Gradients to the data (bitwise) and to tensor tables (a sum over shards: tolerance)."""
    x = f32(16, 512)
    images = f32(8, 2, 32, 32)
    # (spec, the data gradient's split): the gradients of FirFilter and Upfirdn to the data are
    # calls that read the samples whole (VALID, Upfirdn), so that a split there is gathered.
    rows, samples, whole = (P("a"), P("a")), (P(None, "a"), P(None, "a")), (P(None, "a"), P())
    cases = [
        ("fir_filter", lambda v, t: cm.fir_filter(v, t), x, TAPS5, (rows, whole)),
        ("upfirdn", lambda v, t: cm.upfirdn(v, t, up=2, down=3), x, TAPS5, (rows, whole)),
        ("polyval", lambda v, t: cm.polyval(t, v), x, TAPS3, (rows, samples)),
        (
            "separable_filter",
            lambda v, t: cm.separable_filter(v, t, TAPS3),
            images,
            TAPS5,
            ((P("a"), P("a")), (P(None, None, "a"), P(None, None, "a"))),
        ),
    ]
    for name, fn, data, table, specs in cases:

        def loss(v, t, fn=fn):
            return jnp.sum(jnp.sin(fn(v, t)))  # a cotangent split as the result

        grad = jax.jit(jax.grad(loss, argnums=(0, 1)))
        want_x, want_t = (np.asarray(g) for g in grad(data, table))
        for spec, grad_spec in specs:
            sharded = jax.device_put(data, NamedSharding(mesh, spec))
            got_x, got_t = grad(sharded, table)
            label = f"grad {name} {spec}"
            expect(np.array_equal(np.asarray(got_x), want_x), f"{label}: data's not bitwise")
            expect(
                got_x.sharding.is_equivalent_to(NamedSharding(mesh, grad_spec), data.ndim),
                f"{label}: data's gradient split {got_x.sharding.spec}, expected {grad_spec}",
            )
            close = np.allclose(np.asarray(got_t), want_t, rtol=2e-5, atol=1e-5)
            expect(close, f"{label}: table's beyond 2e-5")
    return 2 * sum(len(c[-1]) for c in cases)


def run_transforms(mesh):
    """vmap (data batched, then the table batched too) and shard_map around the ops."""
    x = f32(8, 4, 256)
    sharded = jax.device_put(x, NamedSharding(mesh, P("a")))
    fir = jax.jit(jax.vmap(lambda v: cm.fir_filter(v, TAPS5)))
    got = fir(sharded)
    expect(np.array_equal(np.asarray(got), np.asarray(fir(x))), "vmap: not bitwise")
    expect(got.sharding.is_equivalent_to(sharded.sharding, 3), "vmap: split lost")
    taps = f32(8, 5)
    each = jax.jit(jax.vmap(lambda v, t: cm.fir_filter(v, t)))
    want = np.stack([np.asarray(cm.fir_filter(x[i], jnp.asarray(taps[i]))) for i in range(8)])
    expect(np.array_equal(np.asarray(each(sharded, taps)), want), "vmap over tables: not bitwise")
    inner = jax.jit(
        jax.shard_map(
            lambda v: cm.fir_filter(v, TAPS5), mesh=mesh, in_specs=P("a"), out_specs=P("a")
        )
    )
    got = inner(sharded)
    expect(np.array_equal(np.asarray(got), np.asarray(fir(x))), "shard_map: not bitwise")
    found = {k: v for k, v in collectives(inner.lower(sharded).compile()).items() if v}
    expect(not found, f"shard_map: collectives {found}")
    # Inside shard_map a split filtered axis is each shard's own (its zeros at its ends).
    along = jax.jit(
        jax.shard_map(
            lambda v: cm.fir_filter(v, TAPS5),
            mesh=mesh,
            in_specs=P(None, None, "a"),
            out_specs=P(None, None, "a"),
        )
    )
    pieces = np.split(x, mesh.shape["a"], axis=-1)
    want = np.concatenate([np.asarray(cm.fir_filter(p, TAPS5)) for p in pieces], axis=-1)
    expect(np.array_equal(np.asarray(along(x)), want), "shard_map along the filter: not local")
    return 5


def run_gspmd(mesh):
    """The older partitioner (GSPMD): infer_sharding_from_operands and the same partition."""
    jax.config.update("jax_use_shardy_partitioner", False)
    try:
        signal = f32(64, 1024)
        check(
            "GSPMD fir SAME rows",
            lambda x: cm.fir_filter(x, TAPS5),
            signal,
            (),
            mesh,
            P("a"),
            "none",
        )
        check(
            "GSPMD fir SAME samples",
            lambda x, t: cm.fir_filter(x, t),
            signal,
            (TAPS5,),
            mesh,
            P(None, "a"),
            "permute",
        )
        check(
            "GSPMD upfirdn samples",
            lambda x: cm.upfirdn(x, TAPS5, up=3, down=2),
            signal,
            (),
            mesh,
            P(None, "a"),
            "gather",
            P(),
        )
    finally:
        jax.config.update("jax_use_shardy_partitioner", True)
    return 3


def main() -> int:
    global VERBOSE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exhaustive", action="store_true", help="every border, split and kind")
    parser.add_argument("--verbose", action="store_true", help="a line per case")
    args = parser.parse_args()
    VERBOSE = args.verbose
    start = time.perf_counter()
    all_meshes = meshes((AxisType.Auto, AxisType.Explicit))
    auto = all_meshes[("1d", AxisType.Auto)]
    cases = run_forward(all_meshes, args.exhaustive)
    cases += run_gradients(auto)
    cases += run_transforms(auto)
    cases += run_gspmd(auto)
    platform = jax.devices()[0].platform
    verdict = "PASS" if not FAILURES else f"FAIL failures={len(FAILURES)}"
    print(
        f"RESULT sharding_jax platform={platform} devices={jax.device_count()} cases={cases} "
        f"seconds={time.perf_counter() - start:.1f} {verdict}"
    )
    return 0 if not FAILURES else 1


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: Apache-2.0
"""The JAX ops on a GPU against what a JAX user would write instead, each ratio from this run:

- Polyval against `jax.jit(jnp.polyval)`, degree 16 and 256, 16 Mi float32 elements;
- FirFilter against `jax.lax.conv_general_dilated`, [4096, 16384] float32, 17 and 63 taps;
  both with the table as a jax.Array and as a static (NumPy) table;
- Frobulate at 64 Mi elements (100 entries, a jax.Array table), for comparison with kernel_bench's
  figure of the same run (`kernel_bench --elements 67108864 --quick`);
- the cost of one op at 1 Ki elements inside jit against a jitted elementwise op;
- the cost of an eager call at 1 Ki elements against an eager `jnp.add`: every op with a
  jax.Array table and with a static one, alternating with `jnp.add` over many short rounds, the
  ratio's median and minimum (`--per-call-only` measures only these, on the default device: the
  CPU where there is no GPU);
- Polyval's coefficient gradient at degree 256 on 16 Mi float32 elements, jitted and eagerly,
  against every power at once eagerly: time, and peak GPU memory beyond the inputs in multiples of
  the input's size (measured first, while the process's peak is still the inputs').

Kernel-bound cases run 20 times inside one jitted, unrolled `fori_loop`, each call's output the
next one's input, so that the host's dispatch of a jitted call is not counted (as CUDA events
around a batch of launches do in the C++ benchmarks); the per-call case times separate jitted
calls. Medians of 7 rounds of wall time ending in `block_until_ready`, per call.

    python3 bench/jax_bench.py [--json FILE] [--per-call-only]
"""

import argparse
import json
import statistics
import time

import constmem.jax as cm
import jax
import jax.numpy as jnp
import numpy as np
from timing import alternating_ratios, cpu_model, ratio_line


def ms_per_call(fn, *args, calls=20, rounds=7):
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            out = fn(*args)
        jax.block_until_ready(out)
        times.append((time.perf_counter() - start) / calls * 1e3)
    return statistics.median(times)


def looped(op, iterations=20):
    """A jitted function that applies op(y, *rest) `iterations` times, and the count."""

    @jax.jit
    def run(x, *rest):
        # Unrolled: a while loop on the GPU would copy its predicate to the host every iteration.
        return jax.lax.fori_loop(0, iterations, lambda i, y: op(y, *rest), x, unroll=True)

    return run, iterations


def loop_ms(op, *args):
    run, iterations = looped(op)
    return ms_per_call(run, *args, calls=1) / iterations


def coefficient_gradient(key, x):
    coeffs = jax.random.normal(key, (257,), jnp.float32)
    grad = jax.random.normal(jax.random.PRNGKey(1), x.shape, jnp.float32)
    exponents = jnp.arange(256, -1, -1, dtype=x.dtype)
    eager = jax.grad(lambda c: (cm.polyval(c, x) * grad).sum())
    jitted = jax.jit(eager)

    def all_powers(c):
        return (x[:, None] ** exponents * grad[:, None]).sum(0)

    device = x.devices().pop()
    in_use = device.memory_stats()["bytes_in_use"]
    peaks = []
    for fn in (eager, all_powers):  # the peak only grows: the smaller first
        jax.block_until_ready(fn(coeffs))
        peaks.append((device.memory_stats()["peak_bytes_in_use"] - in_use) / x.nbytes)
    np.testing.assert_allclose(eager(coeffs), jitted(coeffs), rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(eager(coeffs), all_powers(coeffs), rtol=1e-3, atol=4)
    ours, ours_eager = ms_per_call(jitted, coeffs, calls=5), ms_per_call(eager, coeffs, calls=5)
    theirs = ms_per_call(all_powers, coeffs, calls=5)
    temp = jitted.lower(coeffs).compile().memory_analysis().temp_size_in_bytes
    return {
        "constmem_jit_ms": ours,
        "constmem_eager_ms": ours_eager,
        "all_powers_eager_ms": theirs,
        "speedup_eager": theirs / ours_eager,
        "constmem_jit_temp_inputs": temp / x.nbytes,
        "constmem_eager_peak_inputs": peaks[0],
        "all_powers_eager_peak_inputs": peaks[1],
    }


def eager_per_call(key):
    """Each op's eager call at 1 Ki elements against an eager jnp.add, alternating."""
    small = jax.random.normal(key, (1024,), jnp.float32)
    other = jax.random.normal(jax.random.PRNGKey(2), (1024,), jnp.float32)
    rows, image = small.reshape(1, 1024), small.reshape(1, 1, 32, 32)
    tables = {
        "frobulate": (np.arange(100, dtype=np.int32), lambda t: cm.frobulate(small, t)),
        "polyval": (np.linspace(-1, 1, 17, dtype=np.float32), lambda t: cm.polyval(t, small)),
        "fir_filter": (np.linspace(-1, 1, 17, dtype=np.float32), lambda t: cm.fir_filter(rows, t)),
        "interpolate": (
            np.linspace(-1, 1, 16, dtype=np.float32),
            lambda t: cm.interpolate(small, t, -3.0, 3.0),
        ),
        "separable_filter": (
            (np.linspace(-1, 1, 3, dtype=np.float32), np.linspace(1, -1, 3, dtype=np.float32)),
            lambda t: cm.separable_filter(image, *t),
        ),
        "upfirdn": (
            np.linspace(-1, 1, 16, dtype=np.float32),
            lambda t: cm.upfirdn(rows, t, up=2, down=1),
        ),
    }
    measured = {}

    def each(table, convert):  # an op with several tables: each in the same form
        return tuple(convert(t) for t in table) if isinstance(table, tuple) else convert(table)

    for op, (table, call) in tables.items():
        forms = (("array", each(table, jnp.asarray)), ("static", each(table, np.ndarray.tolist)))
        for form, t in forms:
            ratios = alternating_ratios(
                lambda c=call, t=t: c(t).block_until_ready(),
                lambda: jnp.add(small, other).block_until_ready(),
            )
            print(ratio_line(f"eager call, {op:<17} {form:<6}", ratios, "jnp.add"), flush=True)
            ratios["jnp_add_us"] = ratios.pop("baseline_us")
            measured[f"{op}_{form}"] = ratios
    return measured


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--per-call-only", action="store_true")
    args = parser.parse_args()
    key = jax.random.PRNGKey(0)
    device = jax.devices()[0]
    results = {"device": str(device), "jax": jax.__version__}
    if device.platform == "cpu":
        results["cpu"] = cpu_model()
    results["eager_per_call_vs_jnp_add"] = eager_per_call(key)
    if args.per_call_only:
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(results, f, indent=1)
        return

    x = jax.random.uniform(key, (16 << 20,), jnp.float32, -1, 1)
    results["polyval_coeffs_gradient_degree_256"] = coefficient_gradient(key, x)
    for degree in (16, 256):
        coeffs = jax.random.normal(key, (degree + 1,), jnp.float32)
        ours = loop_ms(lambda y, c: cm.polyval(c, y), x, coeffs)
        static = np.asarray(coeffs)
        ours_static = loop_ms(lambda y, c=static: cm.polyval(c, y), x)
        theirs = loop_ms(lambda y, c: jnp.polyval(c, y), x, coeffs)
        results[f"polyval_degree_{degree}"] = {
            "constmem_ms": ours,
            "constmem_static_ms": ours_static,
            "jnp_polyval_ms": theirs,
            "speedup": theirs / ours,
            "speedup_static": theirs / ours_static,
        }

    signal = jax.random.normal(key, (4096, 16384), jnp.float32)

    def conv(s, t):  # SAME padding keeps the length, so that the loop can feed it back
        return jax.lax.conv_general_dilated(s[:, None, :], t[None, None, :], (1,), "SAME")[:, 0]

    for k in (17, 63):
        taps = jax.random.normal(key, (k,), jnp.float32) / k
        ours = loop_ms(lambda s, t: cm.fir_filter(s, t, padding="SAME"), signal, taps)
        static = np.asarray(taps)
        ours_static = loop_ms(lambda s, t=static: cm.fir_filter(s, t, padding="SAME"), signal)
        theirs = loop_ms(conv, signal, taps)
        results[f"fir_filter_{k}_taps"] = {
            "constmem_ms": ours,
            "constmem_static_ms": ours_static,
            "conv_general_dilated_ms": theirs,
            "speedup": theirs / ours,
            "speedup_static": theirs / ours_static,
        }

    large = jax.random.normal(key, (64 << 20,), jnp.float32)
    hundred = jnp.arange(100, dtype=jnp.int32) % 3 - 1  # sums to zero: values stay bounded
    ms = loop_ms(cm.frobulate, large, hundred)
    results["frobulate_64mi_100"] = {"ms": ms, "g_adds_per_s": large.size * 100 / ms / 1e6}
    del large

    small = jax.random.normal(key, (1024,), jnp.float32)
    table = jnp.arange(100, dtype=jnp.int32)
    ours = ms_per_call(jax.jit(cm.frobulate), small, table, calls=2000)
    theirs = ms_per_call(jax.jit(lambda a, b: jnp.sin(a) + b[0]), small, table, calls=2000)
    results["per_call_1ki"] = {"constmem_us": ours * 1e3, "elementwise_us": theirs * 1e3}
    results["per_call_1ki"]["ratio"] = ours / theirs

    print(json.dumps(results, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

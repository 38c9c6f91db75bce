# SPDX-License-Identifier: Apache-2.0
"""The JAX ops on a GPU against what a JAX user would write instead, each ratio from this run:

- Polyval against `jax.jit(jnp.polyval)`, degree 16 and 256, 16 Mi float32 elements;
- FirFilter against `jax.lax.conv_general_dilated`, [4096, 16384] float32, 17 and 63 taps;
- the cost of one op at 1 Ki elements inside jit against a jitted elementwise op.

Times are medians of wall time over batches of calls ending in `block_until_ready`, per call.

    python3 bench/jax_bench.py [--json FILE]
"""

import argparse
import json
import statistics
import time

import constmem.jax as cm
import jax
import jax.numpy as jnp


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    args = parser.parse_args()
    key = jax.random.PRNGKey(0)
    results = {"device": str(jax.devices()[0]), "jax": jax.__version__}

    x = jax.random.uniform(key, (16 << 20,), jnp.float32, -1, 1)
    for degree in (16, 256):
        coeffs = jax.random.normal(key, (degree + 1,), jnp.float32)
        ours = ms_per_call(jax.jit(cm.polyval), coeffs, x)
        theirs = ms_per_call(jax.jit(jnp.polyval), coeffs, x)
        results[f"polyval_degree_{degree}"] = {
            "constmem_ms": ours,
            "jnp_polyval_ms": theirs,
            "speedup": theirs / ours,
        }

    signal = jax.random.normal(key, (4096, 16384), jnp.float32)

    def conv(s, t):
        return jax.lax.conv_general_dilated(s[:, None, :], t[None, None, :], (1,), "VALID")[:, 0]

    for k in (17, 63):
        taps = jax.random.normal(key, (k,), jnp.float32)
        ours = ms_per_call(jax.jit(lambda s, t: cm.fir_filter(s, t, padding="VALID")), signal, taps)
        theirs = ms_per_call(jax.jit(conv), signal, taps)
        results[f"fir_filter_{k}_taps"] = {
            "constmem_ms": ours,
            "conv_general_dilated_ms": theirs,
            "speedup": theirs / ours,
        }

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

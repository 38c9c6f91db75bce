# SPDX-License-Identifier: Apache-2.0
"""The PyTorch ops on a GPU against what a PyTorch user would write instead, each ratio measured
in this run:

- Polyval (coefficients a CUDA tensor that changes every call) against a Horner loop compiled by
  torch.compile, degree 16 and 256, 16 Mi float32 elements;
- FirFilter against torch.nn.functional.conv1d (cuDNN), [4096, 16384] float32, 17 and 63 taps;
- the per-call cost at 1 Ki elements against torch.add, eagerly: every op in every table form
  (a CUDA tensor, a CPU tensor, a static list), and each op's raw overload below autograd (the
  floor PyTorch's route to a custom op sets, beside `aten.add` by that route), each alternating
  with torch.add over many short rounds, the ratio's median and minimum over the rounds (host
  timings swing between runs on a shared machine; alternating in one run keeps the ratio); with
  `--device cpu` (per-call cases only) the same on CPU tensors, where both include their CPU
  kernels;
- Frobulate at 64 Mi elements (100 entries), for comparison with kernel_bench's figure;
- Polyval's coefficient gradient at degree 256 on 16 Mi float32 elements (blocks of powers) against
  every power at once: GPU time and peak memory beyond the inputs, in multiples of the input's size.

    python3 bench/torch_bench.py [--json FILE] [--per-call-only] [--device cpu]
"""

import argparse
import itertools
import json
import statistics
import time

import constmem.torch as cm
import torch
import torch.nn.functional as F
from timing import alternating_ratios, cpu_model, cuda_event_ms, ratio_line


def gpu_ms(fn, repetitions=15, batch=10, warmup=5):
    """Median over `repetitions` of the GPU time per call of `batch` back-to-back calls (CUDA
    events around the batch, so that the host's time to reach the first launch is not counted,
    as in the C++ benchmarks), after `warmup` calls."""
    return cuda_event_ms(fn, repetitions, batch, warmup)


def host_us_per_call(fn, calls=20000, rounds=5):
    """Median over `rounds` of the wall time per call of `calls` back-to-back eager calls."""
    for _ in range(1000):
        fn()
    torch.cuda.synchronize()
    results = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        results.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(results)


def peak_bytes(fn):
    """GPU memory allocated at the peak of one call of `fn`, beyond what was allocated before."""
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - before


def per_call_cases(device="cuda"):
    """(op, form, call) at 1 Ki elements of data, each op with a small table in each form."""
    small = torch.randn(1024, device=device)
    rows = small.view(1, 1024)
    image = small.view(1, 1, 32, 32)
    tables = {
        "frobulate": (torch.arange(100, dtype=torch.int32), lambda t: cm.frobulate(small, t)),
        "polyval": (torch.randn(17), lambda t: cm.polyval(t, small)),
        "fir_filter": (torch.randn(17), lambda t: cm.fir_filter(rows, t)),
        "interpolate": (torch.randn(16), lambda t: cm.interpolate(small, t, lo=-3.0, hi=3.0)),
        "separable_filter": (
            (torch.randn(3), torch.randn(3)),
            lambda t: cm.separable_filter(image, *t),
        ),
        "upfirdn": (torch.randn(16), lambda t: cm.upfirdn(rows, t, up=2, down=1)),
    }

    def each(table, convert):  # an op with several tables: each in the same form
        return tuple(convert(t) for t in table) if isinstance(table, tuple) else convert(table)

    for op, (table, call) in tables.items():
        forms = {"cpu": table, "static": each(table, lambda t: t.tolist())}
        if device != "cpu":
            forms = {"cuda": each(table, lambda t: t.to(device)), **forms}
        for form, t in forms.items():
            yield op, form, (lambda c=call, t=t: c(t))


def raw_cases(device="cuda"):
    """(op, call): each op's raw overload called below autograd with none of constmem's Python,
    its table a tensor on the data's device, its attributes' defaults; and PyTorch's own
    `aten.add` by the same route. What reaching a custom op costs PyTorch: the per-call floor."""
    below = torch._C._AutoDispatchBelowAutograd
    small = torch.randn(1024, device=device)
    rows, image = small.view(1, 1024), small.view(1, 1, 32, 32)

    def taps(n):
        return torch.randn(n, device=device)

    ops = torch.ops.constmem
    cases = {
        "frobulate": (ops.frobulate, small, torch.arange(100, dtype=torch.int32, device=device)),
        "polyval": (ops.polyval, small, taps(17)),
        "fir_filter": (ops.fir_filter, rows, taps(17), "SAME"),
        "interpolate": (ops.interpolate, small, taps(16), -3.0, 3.0),
        "upfirdn": (ops.upfirdn, rows, taps(16), 2, 1),
        "separable_filter": (
            ops.separable_filter,
            *(image, taps(3), taps(3), "shared", "reflect", "channels_first"),
        ),
        "aten.add": (torch.ops.aten.add.Tensor, small, small),
    }
    for op, (overload, *args) in cases.items():
        entry = getattr(overload, "default", overload)._op

        def call(entry=entry, args=args):
            with below():
                return entry(*args)

        yield op, call


def horner(coeffs, x):
    y = torch.full_like(x, 0) + coeffs[0]
    for i in range(1, coeffs.shape[0]):
        y = y * x + coeffs[i]
    return y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--per-call-only", action="store_true")
    parser.add_argument("--device", default="cuda", help="cuda, or cpu (per-call cases only)")
    args = parser.parse_args()
    torch.manual_seed(0)
    device = args.device
    if device == "cpu":
        args.per_call_only = True
        torch.set_num_threads(1)  # the host cost of a call, not its kernel's threads
    name = cpu_model() if device == "cpu" else torch.cuda.get_device_name()
    results = {"device": name, "torch": torch.__version__}

    small, other = torch.randn(1024, device=device), torch.randn(1024, device=device)
    per_call = {}
    wait = torch.cuda.synchronize if device != "cpu" else lambda: None
    for op, form, call in per_call_cases(device):
        measured = alternating_ratios(call, lambda: torch.add(small, other), wait)
        print(ratio_line(f"per call, {op:<17} {form:<7}", measured, "torch.add"), flush=True)
        measured["torch_add_us"] = measured.pop("baseline_us")
        per_call[f"{op}_{form}"] = measured
    worst = max(per_call.values(), key=lambda m: m["ratio_median"])
    for op, call in raw_cases(device):
        measured = alternating_ratios(call, lambda: torch.add(small, other), wait)
        print(ratio_line(f"per call, {op:<17} raw    ", measured, "torch.add"), flush=True)
        measured["torch_add_us"] = measured.pop("baseline_us")
        per_call[f"{op}_raw"] = measured
    results["per_call_vs_torch_add"] = per_call
    print(f"per call: the largest median ratio {worst['ratio_median']:.2f}x", flush=True)
    if args.per_call_only:
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(results, f, indent=1)
        return

    x = torch.rand(16 << 20, device="cuda") * 2 - 1
    for degree in (16, 256):
        compiled = torch.compile(horner)
        # Coefficients that change every call: four tensors in turn.
        coeffs = itertools.cycle([torch.randn(degree + 1, device="cuda") for _ in range(4)])
        ours = gpu_ms(lambda c=coeffs: cm.polyval(next(c), x))
        theirs = gpu_ms(lambda c=coeffs, f=compiled: f(next(c), x))
        first = next(coeffs)
        torch.testing.assert_close(cm.polyval(first, x), compiled(first, x), rtol=1e-3, atol=1e-3)
        results[f"polyval_degree_{degree}"] = {
            "constmem_ms": ours,
            "compiled_horner_ms": theirs,
            "speedup": theirs / ours,
        }

    signal = torch.randn(4096, 16384, device="cuda")
    for k in (17, 63):
        taps = torch.randn(k, device="cuda")
        ours = gpu_ms(lambda t=taps: cm.fir_filter(signal, t, padding="VALID"))
        theirs = gpu_ms(lambda t=taps: F.conv1d(signal.view(4096, 1, -1), t.view(1, 1, -1)))
        ref = F.conv1d(signal.view(4096, 1, -1).double(), taps.double().view(1, 1, -1)).view(
            4096, -1
        )
        torch.testing.assert_close(
            cm.fir_filter(signal, taps, padding="VALID").double(), ref, rtol=1e-4, atol=1e-4
        )
        results[f"fir_filter_{k}_taps"] = {
            "constmem_ms": ours,
            "conv1d_ms": theirs,
            "speedup": theirs / ours,
        }

    small = torch.randn(1024, device="cuda")
    other = torch.randn(1024, device="cuda")
    table = torch.arange(100, dtype=torch.int32, device="cuda")
    ours = host_us_per_call(lambda: cm.frobulate(small, table))
    raw = host_us_per_call(lambda: torch.ops.constmem.frobulate(small, table))
    static = host_us_per_call(lambda: cm.frobulate(small, [1, 2, 3]))
    with torch.inference_mode():
        no_autograd = host_us_per_call(lambda: torch.ops.constmem.frobulate(small, table))
    theirs = host_us_per_call(lambda: torch.add(small, other))
    results["per_call_1ki"] = {
        "constmem_us": ours,
        "op_us": raw,
        "static_table_us": static,
        "op_inference_mode_us": no_autograd,
        "torch_add_us": theirs,
        "ratio": ours / theirs,
    }

    large = torch.randn(64 << 20, device="cuda")
    ms = gpu_ms(lambda: cm.frobulate(large, table))
    results["frobulate_64mi_100"] = {"ms": ms, "g_adds_per_s": large.numel() * 100 / ms / 1e6}

    coeffs = torch.randn(257, device="cuda", requires_grad=True)
    grad = torch.randn_like(x)
    exponents = torch.arange(256, -1, -1, dtype=x.dtype, device="cuda")

    def blocked():
        return torch.autograd.grad(cm.polyval(coeffs, x), coeffs, grad)[0]

    def all_powers():
        return ((x.reshape(-1, 1) ** exponents) * grad.reshape(-1, 1)).sum(0)

    torch.testing.assert_close(blocked(), all_powers(), rtol=1e-3, atol=1e-3 * grad.norm().item())
    ours, theirs = gpu_ms(blocked, repetitions=5), gpu_ms(all_powers, repetitions=5)
    ours_bytes, theirs_bytes = peak_bytes(blocked), peak_bytes(all_powers)
    results["polyval_coeffs_gradient_degree_256"] = {
        "constmem_ms": ours,
        "all_powers_ms": theirs,
        "speedup": theirs / ours,
        "constmem_peak_inputs": ours_bytes / x.nbytes,
        "all_powers_peak_inputs": theirs_bytes / x.nbytes,
    }

    print(json.dumps(results, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""Audio resampling with constmem's upfirdn against the resamplers people use, every ratio measured
in this run.

GPU (float32, CUDA events, median of repetitions of back-to-back batches):
- for 48000->16000, 16000->48000, 44100->48000 and 48000->44100, batches of [64, 10 s] and
  [1, 600 s] at the input rate: constmem.torch.resample (torchaudio's filter; also with its filter
  as a CUDA tensor table, without the static table's per-call host cost) and resample_poly
  (scipy's) against torchaudio.functional.resample, torchaudio.transforms.Resample (its kernel
  made once), julius.resample_frac and cupyx.scipy.signal.resample_poly, and a copy-bandwidth
  ceiling measured in this run (a device copy moving the input's and the output's bytes);
- upfirdn with 31 and 255 taps at 2/1, 1/2 and 3/2 on [64, 480000] against
  cupyx.scipy.signal.upfirdn and the ceiling.
CPU (float32, wall time, median): scipy.signal.resample_poly, soxr.resample, torchaudio CPU and
constmem CPU with the same number of threads (and constmem on one thread) on [8, 10 s].

An anchor whose package is missing is skipped and listed under "skipped". julius and soxr may be
carried as wheels: --wheels DIR installs the *.whl found there into a temporary directory (pip,
--no-index --no-deps) before importing.

    python3 bench/resample_bench.py [--json FILE] [--wheels DIR] [--threads N] [--quick]
"""

import argparse
import glob
import importlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import cuda_event_ms, median_seconds

RATES = [(48000, 16000), (16000, 48000), (44100, 48000), (48000, 44100)]
UPFIRDN = [(31, 2, 1), (31, 1, 2), (31, 3, 2), (255, 2, 1), (255, 1, 2), (255, 3, 2)]


def install_wheels(directory):
    """pip-installs the wheels in `directory` into a temporary folder put on sys.path."""
    wheels = sorted(glob.glob(os.path.join(directory, "*.whl")))
    if not wheels:
        return []
    target = tempfile.mkdtemp(prefix="resample_bench_wheels_")
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
    subprocess.run([*command, "--target", target, *wheels], check=True)
    sys.path.insert(0, target)
    return [os.path.basename(w) for w in wheels]


def optional(name, skipped):
    try:
        return importlib.import_module(name)
    except Exception as error:  # missing, or its native library fails to load
        skipped[name] = f"not importable: {type(error).__name__}: {error}"
        return None


def gpu_ms(fn, repetitions=7, batch=3, warmup=2):
    """Median over `repetitions` of the GPU time per call of `batch` back-to-back calls on the
    current stream (CUDA events around the batch), after `warmup` calls."""
    return cuda_event_ms(fn, repetitions, batch, warmup)


def copy_ceiling_ms(in_elements, out_elements):
    """The time a device copy takes to move as many bytes as reading the input and writing the
    output (a copy of (in + out) / 2 elements reads and writes that many)."""
    count = max((in_elements + out_elements) // 2, 1)
    src = torch.empty(count, device="cuda")
    dst = torch.empty_like(src)
    return gpu_ms(lambda: dst.copy_(src))


def max_abs(a, b):
    """The largest difference of two results, or None where their shapes differ."""
    if a.shape != b.shape:
        return None
    return float((a.double() - b.double()).abs().max()) if a.numel() else 0.0


def gpu_resample(cm, torchaudio, julius, cupy, cupy_signal, seconds, batch, quick):
    from constmem.ops.upfirdn import _sinc_design as sinc_design

    results = {}
    for orig, new in RATES:
        n = int(seconds * orig)
        x = torch.randn(batch, n, device="cuda")
        g = math.gcd(orig, new)
        up, down = new // g, orig // g
        ours = cm.resample(x, orig, new)
        row = {"shape": [batch, n], "output": list(ours.shape)}
        row["constmem_resample_ms"] = gpu_ms(lambda x=x, o=orig, w=new: cm.resample(x, o, w))
        row["constmem_resample_poly_ms"] = gpu_ms(
            lambda x=x, u=up, d=down: cm.resample_poly(x, u, d)
        )
        # The same filter as a CUDA tensor table: no per-call conversion of a static list (about
        # 25 ns a tap on the host), the table copied into constant memory on the stream instead.
        taps, first = sinc_design(down, up, 6, 0.99, "sinc_interp_hann", None)
        cuda_taps = torch.tensor(taps, dtype=x.dtype, device="cuda")
        count = ours.shape[-1]

        def tensor_table(x=x, t=cuda_taps, u=up, d=down, a=first, c=count):
            return cm.upfirdn(x, t, up=u, down=d)[..., a : a + c]

        assert torch.equal(tensor_table(), ours)
        row["constmem_resample_tensor_table_ms"] = gpu_ms(tensor_table)
        out_elements = ours.numel()
        row["copy_ceiling_ms"] = copy_ceiling_ms(x.numel(), out_elements)
        row["resample_of_ceiling"] = row["copy_ceiling_ms"] / row["constmem_resample_ms"]
        if torchaudio is not None:
            F = torchaudio.functional
            theirs = F.resample(x, orig, new)
            row["torchaudio_max_abs_diff"] = max_abs(ours, theirs)
            row["torchaudio_functional_ms"] = gpu_ms(
                lambda x=x, o=orig, w=new, f=F: f.resample(x, o, w)
            )
            transform = torchaudio.transforms.Resample(orig, new).to("cuda")
            row["torchaudio_transform_ms"] = gpu_ms(lambda x=x, t=transform: t(x))
        if julius is not None:
            # julius's own filter (24 zero crossings, rolloff 0.945): a different design.
            row["julius_max_abs_diff"] = max_abs(ours, julius.resample_frac(x, orig, new))
            row["julius_ms"] = gpu_ms(lambda x=x, o=orig, w=new: julius.resample_frac(x, o, w))
        if cupy is not None:
            stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
            with stream:
                cx = cupy.from_dlpack(x)
                poly = torch.from_dlpack(cupy_signal.resample_poly(cx, up, down, axis=-1))
                row["cupy_poly_max_abs_diff"] = max_abs(cm.resample_poly(x, up, down), poly)
                row["cupy_resample_poly_ms"] = gpu_ms(
                    lambda c=cx, u=up, d=down: cupy_signal.resample_poly(c, u, d, axis=-1)
                )
        for key in list(row):
            if key.endswith("_ms") and not key.startswith(("constmem", "copy")):
                row[key.replace("_ms", "_speedup")] = row[key] / row["constmem_resample_ms"]
        results[f"{orig}->{new}"] = row
        del x, ours
        torch.cuda.empty_cache()
        if quick:
            break
    return results


def gpu_upfirdn(cm, cupy, cupy_signal, quick):
    results = {}
    x = torch.randn(64, 480000, device="cuda")
    rng = np.random.default_rng(0)
    for k, up, down in UPFIRDN:
        taps = torch.tensor(rng.standard_normal(k) / math.sqrt(k), dtype=torch.float32)
        static = taps.tolist()
        ours = cm.upfirdn(x, static, up=up, down=down)
        row = {"output": list(ours.shape)}
        row["constmem_static_ms"] = gpu_ms(
            lambda s=static, u=up, d=down: cm.upfirdn(x, s, up=u, down=d)
        )
        cuda_taps = taps.cuda()
        row["constmem_tensor_ms"] = gpu_ms(
            lambda t=cuda_taps, u=up, d=down: cm.upfirdn(x, t, up=u, down=d)
        )
        row["copy_ceiling_ms"] = copy_ceiling_ms(x.numel(), ours.numel())
        row["static_of_ceiling"] = row["copy_ceiling_ms"] / row["constmem_static_ms"]
        if cupy is not None:
            stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
            with stream:
                cx, ct = cupy.from_dlpack(x), cupy.asarray(taps.numpy())
                theirs = torch.from_dlpack(cupy_signal.upfirdn(ct, cx, up, down, axis=-1))
                row["cupy_max_abs_diff"] = max_abs(ours, theirs)
                row["cupy_upfirdn_ms"] = gpu_ms(
                    lambda c=cx, t=ct, u=up, d=down: cupy_signal.upfirdn(t, c, u, d, axis=-1)
                )
                row["cupy_upfirdn_speedup"] = row["cupy_upfirdn_ms"] / row["constmem_static_ms"]
        results[f"{k}taps_{up}/{down}"] = row
        if quick:
            break
    return results


def cpu_resample(cm, torchaudio, soxr, scipy_signal, threads, quick, skipped):
    results = {}
    torch.set_num_threads(threads)
    batch, seconds = 8, 10
    for orig, new in RATES:
        n = seconds * orig
        x = torch.randn(batch, n)
        g = math.gcd(orig, new)
        up, down = new // g, orig // g
        row = {"shape": [batch, n], "threads": threads}
        row["constmem_resample_ms"] = 1e3 * median_seconds(
            lambda x=x, o=orig, w=new: cm.resample(x, o, w)
        )
        row["constmem_resample_poly_ms"] = 1e3 * median_seconds(
            lambda x=x, u=up, d=down: cm.resample_poly(x, u, d)
        )
        torch.set_num_threads(1)
        row["constmem_resample_1_thread_ms"] = 1e3 * median_seconds(
            lambda x=x, o=orig, w=new: cm.resample(x, o, w), repetitions=3
        )
        torch.set_num_threads(threads)
        if torchaudio is not None:
            row["torchaudio_ms"] = 1e3 * median_seconds(
                lambda x=x, o=orig, w=new: torchaudio.functional.resample(x, o, w)
            )
        xn = x.numpy()
        if scipy_signal is not None:
            row["scipy_resample_poly_ms"] = 1e3 * median_seconds(
                lambda a=xn, u=up, d=down: scipy_signal.resample_poly(a, u, d, axis=-1),
                repetitions=3,
            )
        if soxr is not None:
            frames = np.ascontiguousarray(xn.T)  # soxr takes [frames, channels]
            row["soxr_hq_ms"] = 1e3 * median_seconds(
                lambda f=frames, o=orig, w=new: soxr.resample(f, o, w), repetitions=3
            )
        for key in list(row):
            if key.endswith("_ms") and not key.startswith("constmem"):
                row[key.replace("_ms", "_speedup")] = row[key] / row["constmem_resample_ms"]
        results[f"{orig}->{new}"] = row
        if quick:
            break
    return results


def table(title, rows, base):
    print(f"\n{title}")
    columns = sorted({k for row in rows.values() for k in row if k.endswith("_ms")})
    header = f"{'case':>18}" + "".join(f"{c.removesuffix('_ms')[-23:]:>24}" for c in columns)
    print(header)
    for case, row in rows.items():
        cells = []
        for c in columns:
            if c not in row:
                cells.append(f"{'-':>24}")
                continue
            ratio = row[c] / row[base] if base in row else float("nan")
            cells.append(f"{row[c]:>12.3f} ({ratio:>6.2f}x)   ")
        print(f"{case:>18}" + "".join(cells))
    print(f"(ms; in parentheses: time / {base.removesuffix('_ms')})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--wheels", help="a folder of wheels (julius, soxr) to install first")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--quick", action="store_true", help="one case of each (a smoke test)")
    parser.add_argument("--no-cpu", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    skipped = {}
    installed = install_wheels(args.wheels) if args.wheels else []
    import constmem.torch as cm

    torchaudio = optional("torchaudio", skipped)
    julius = optional("julius", skipped)
    soxr = optional("soxr", skipped)
    scipy_signal = optional("scipy.signal", skipped)
    cupy = optional("cupy", skipped)
    cupy_signal = optional("cupyx.scipy.signal", skipped) if cupy is not None else None
    if cupy_signal is None:
        cupy = None
    torch.manual_seed(0)
    results = {
        "torch": torch.__version__,
        "wheels_installed": installed,
        "skipped": skipped,
        "versions": {
            m.__name__: getattr(m, "__version__", "?")
            for m in (torchaudio, julius, soxr, cupy)
            if m is not None
        },
    }
    if torch.cuda.is_available():
        results["device"] = torch.cuda.get_device_name()
        with torch.inference_mode():
            for name, seconds, batch in (("batch_64x10s", 10, 64), ("batch_1x600s", 600, 1)):
                results[f"gpu_resample_{name}"] = gpu_resample(
                    cm, torchaudio, julius, cupy, cupy_signal, seconds, batch, args.quick
                )
            results["gpu_upfirdn_64x480000"] = gpu_upfirdn(cm, cupy, cupy_signal, args.quick)
    else:
        skipped["gpu"] = "no CUDA device"
    if not args.no_cpu:
        with torch.inference_mode():
            results["cpu_resample_8x10s"] = cpu_resample(
                cm, torchaudio, soxr, scipy_signal, args.threads, args.quick, skipped
            )
    results["seconds"] = time.perf_counter() - started

    for key, rows in results.items():
        if key.startswith("gpu_resample") or key.startswith("cpu_resample"):
            table(key, rows, "constmem_resample_ms")
        elif key.startswith("gpu_upfirdn"):
            table(key, rows, "constmem_static_ms")
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    print(f"total {results['seconds']:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""constmem's Gaussian blur (SeparableFilter) against what an image-processing user runs instead,
each ratio measured in this run:

GPU (CUDA events, median of repeated batches):
- float32 and uint8 [32, 3, 1080, 1920] and [256, 3, 224, 224], k = 3, 5, 9, 17, 31, 63:
  constmem.torch.gaussian_blur against torchvision.transforms.v2.functional.gaussian_blur,
  kornia.filters.gaussian_blur2d (when kornia is importable; else skipped, said so) and
  cupyx.scipy.ndimage.gaussian_filter1d twice with the same taps (CuPy; "mirror" is reflect-101);
- NVIDIA CV-CUDA's cvcuda.gaussian_into (where cvcuda is importable: scripts/cvcuda-bundle.sh
  carries it) on an NHWC copy of the images, reflect-101 borders, against constmem on the same
  NHWC images (layout="channels_last");
- a copy-bandwidth ceiling measured in the same run: one read and one write of the images
  (torch's copy_), the least any filter can cost;
- per-image tables (one sigma per image) against a shared one, same k: the Gaussian form (taps
  made on the GPU at each call) and the op alone with a per-image CUDA table.

CPU (the same threads for everyone: torch's intra-op threads, OpenCV's, constmem's CPU kernel):
- cv2.GaussianBlur (BORDER_REFLECT_101, one call an image, OpenCV's fixed-point path for uint8)
  and scipy.ndimage.correlate1d twice against constmem (layout="channels_last") on smaller
  interleaved images: float32 and uint8 [8, 540, 960, 3] (NHWC), and one [224, 224, 3] image a
  call (a data loader's transform), k = 3, 9, 31, constmem and OpenCV alternating call by call,
  OpenCV's multiple the median of 25 (wall time); for the one image, also
  torchvision.transforms.v2.functional.gaussian_blur on it as a [3, 224, 224] tensor against
  constmem on the same (where torchvision is importable). The CPU's model goes in each row.
  `--cpu-time`: one thread each, the calling thread's CPU time (time.thread_time, which other
  processes' load does not inflate), constmem and OpenCV alternating, the minimum and the median
  of 15.

    python3 bench/image_filter_bench.py [--json FILE] [--quick]
                                        [--gpu-only | --cpu-only [--cpu-time] | --layouts]

--layouts times constmem alone, NCHW and NHWC, at k = 3, 5, 7 and 9, both shapes and dtypes: run
by turns with CONSTMEM_TORCH_LIBRARY naming each of two builds of the PyTorch library, it compares
them.

A few minutes on an H200 (each anchor where importable).
"""

import argparse
import importlib
import itertools
import json
import statistics
import time

import constmem.torch as cm
import numpy as np
import torch
from timing import alternating_ratios, cpu_model, cuda_event_ms

KS = (3, 5, 9, 17, 31, 63)
LAYOUT_KS = (3, 5, 7, 9)  # the register kernel's filters
CPU_KS = (3, 9, 31)


def optional(name):
    try:
        return importlib.import_module(name)
    except Exception:
        return None


def gpu_ms(fn, repetitions=7, batch=5, warmup=2):
    """Median over `repetitions` of the GPU time per call of `batch` back-to-back calls.

    Slow calls (a 63 x 63 depthwise convolution of 1080p images takes seconds) are timed fewer
    times, so that the whole run stays within minutes.
    """
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    first = start.elapsed_time(end)
    if first > 200:
        repetitions, batch, warmup = (1 if first > 1000 else 3), 1, 0
    elif first > 20:
        batch, warmup = 1, 1
    return cuda_event_ms(fn, repetitions, batch, warmup)


def cpu_ms(fn, repetitions=15):
    fn()
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def taps(k):
    """torchvision's default sigma and taps for k (float64)."""
    from constmem.ops import separable_filter as description

    sigma = 0.3 * ((k - 1) * 0.5 - 1) + 0.8
    return sigma, np.asarray(description.gaussian_taps(k, sigma))


def ratio(row, key, ours="constmem_ms"):
    """The other's time as a multiple of constmem's, or "-" where it was not measured."""
    return f"{row[key] / row[ours]:.2f}x" if key in row else "-"


def gpu_row(x, k, copy_ms, tv, kornia, cupy, cupy_ndimage, cvcuda):
    """One GPU case: constmem, its per-image form and the others on images x with k taps."""
    sigma, t = taps(k)
    row = {"shape": list(x.shape), "dtype": str(x.dtype).removeprefix("torch."), "k": k}
    row["copy_ms"] = copy_ms
    row["constmem_ms"] = gpu_ms(lambda: cm.gaussian_blur(x, k))
    # Per-image tables: one sigma per image (B, 2), the taps made on the GPU at each call.
    # (The table holds B * 2k entries: more images than its 4,096 entries hold are left out.)
    # The op alone with the same taps as per-image CUDA tables ([B * k] each): what tables per
    # image cost the kernel; the Gaussian form adds the taps' own small kernels.
    if x.shape[0] * k <= cm.MAX_SEPARABLE_TABLE:
        sigmas = torch.full((x.shape[0], 2), sigma, device="cuda")
        row["per_image_ms"] = gpu_ms(lambda: cm.gaussian_blur(x, k, sigmas))
        table = torch.as_tensor(np.tile(t, x.shape[0]), device="cuda").to(torch.float32)
        row["per_image_table_ms"] = gpu_ms(
            lambda: cm.separable_filter(x, table, table, taps="per_image")
        )
    if tv is not None:
        row["torchvision_ms"] = gpu_ms(lambda: tv.gaussian_blur(x, [k, k], [sigma, sigma]))
    if kornia is not None and x.is_floating_point():  # kornia takes float images
        row["kornia_ms"] = gpu_ms(
            lambda: kornia.filters.gaussian_blur2d(x, (k, k), (sigma, sigma), "reflect")
        )
    if cupy_ndimage is not None:
        cx = cupy.asarray(x)  # shares the memory (__cuda_array_interface__)
        weights = cupy.asarray(t.astype(np.float32))
        out = cupy.empty_like(cx)

        def cupy_blur():
            tmp = cupy_ndimage.correlate1d(cx, weights, axis=-1, mode="mirror")
            cupy_ndimage.correlate1d(tmp, weights, axis=-2, output=out, mode="mirror")

        row["cupy_ms"] = gpu_ms(cupy_blur)
    nhwc = x.permute(0, 2, 3, 1).contiguous()
    row["constmem_nhwc_ms"] = gpu_ms(lambda: cm.gaussian_blur(nhwc, k, layout="channels_last"))
    if cvcuda is not None:
        # NHWC on both sides, CV-CUDA's layout (reflect-101 borders), on torch's stream.
        out = torch.empty_like(nhwc)
        src, dst = cvcuda.as_tensor(nhwc, "NHWC"), cvcuda.as_tensor(out, "NHWC")
        stream = cvcuda.as_stream(int(torch.cuda.current_stream().cuda_stream))
        try:
            row["cvcuda_ms"] = gpu_ms(
                lambda: cvcuda.gaussian_into(
                    dst, src, (k, k), (sigma, sigma), cvcuda.Border.REFLECT101, stream=stream
                )
            )
        except Exception as error:  # a kernel size CV-CUDA refuses: said so in the row
            row["cvcuda_error"] = str(error)[:200]
    return row


def nhwc_columns(row):
    """constmem's NHWC time and CV-CUDA's as a multiple of it (refused, or not run: -)."""
    ours = row["constmem_nhwc_ms"]
    theirs = "refused" if "cvcuda_error" in row else ratio(row, "cvcuda_ms", "constmem_nhwc_ms")
    return f" {ours:>8.3f} {theirs:>8}"


GPU_SHAPES = [
    ((32, 3, 1080, 1920), torch.float32),
    ((256, 3, 224, 224), torch.float32),
    ((32, 3, 1080, 1920), torch.uint8),
    ((256, 3, 224, 224), torch.uint8),
]


def gpu_images(shape, dtype):
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, dtype=dtype, device="cuda")
    return torch.rand(shape, dtype=dtype, device="cuda")


def layout_cases(results):
    """constmem alone, NCHW and NHWC, at the short filters: for comparing two builds of the
    PyTorch library (CONSTMEM_TORCH_LIBRARY names each), run by turns."""
    print(f"{'shape':>22} {'dtype':>7} {'k':>3} {'NCHW ms':>8} {'NHWC ms':>8} {'NHWC/NCHW':>9}")
    for shape, dtype in GPU_SHAPES:
        x = gpu_images(shape, dtype)
        nhwc = x.permute(0, 2, 3, 1).contiguous()
        for k in LAYOUT_KS:
            nchw_ms = gpu_ms(lambda x=x, k=k: cm.gaussian_blur(x, k))
            nhwc_ms = gpu_ms(
                lambda nhwc=nhwc, k=k: cm.gaussian_blur(nhwc, k, layout="channels_last")
            )
            dtype_name = str(dtype).removeprefix("torch.")
            results.append(
                {
                    "shape": list(shape),
                    "dtype": dtype_name,
                    "k": k,
                    "constmem_ms": nchw_ms,
                    "constmem_nhwc_ms": nhwc_ms,
                }
            )
            print(
                f"{shape!s:>22} {dtype_name:>7} {k:>3} {nchw_ms:>8.3f} {nhwc_ms:>8.3f} "
                f"{nhwc_ms / nchw_ms:>9.2f}"
            )


def gpu_cases(args, results):
    tv = optional("torchvision.transforms.v2.functional")
    kornia = optional("kornia")
    cupy = optional("cupy")
    cupy_ndimage = optional("cupyx.scipy.ndimage") if cupy is not None else None
    cvcuda = optional("cvcuda")
    anchors = (("torchvision", tv), ("kornia", kornia), ("cupy", cupy), ("cvcuda", cvcuda))
    missing = [n for n, m in anchors if m is None]
    if missing:
        print(f"skipped (not importable): {', '.join(missing)}")
    shapes = GPU_SHAPES[1:2] if args.quick else GPU_SHAPES
    print("GPU: constmem's time, and the others' as multiples of it (>1: constmem faster)")
    print(
        f"{'shape':>22} {'dtype':>7} {'k':>3} {'constmem ms':>11} {'copy ms':>8} "
        f"{'of ceiling':>10} {'torchvision':>11} {'kornia':>7} {'cupy':>7} {'per-image':>9} "
        f"{'table':>6} {'NHWC ms':>8} {'CV-CUDA':>8}"
    )
    for shape, dtype in shapes:
        x = gpu_images(shape, dtype)
        copy = torch.empty_like(x)
        copy_ms = gpu_ms(lambda x=x, copy=copy: copy.copy_(x))
        for k in KS:
            row = gpu_row(x, k, copy_ms, tv, kornia, cupy, cupy_ndimage, cvcuda)
            results.append(row)
            ours = row["constmem_ms"]
            print(
                f"{shape!s:>22} {row['dtype']:>7} {k:>3} {ours:>11.3f} {copy_ms:>8.3f} "
                f"{copy_ms / ours:>10.0%} {ratio(row, 'torchvision_ms'):>11} "
                f"{ratio(row, 'kornia_ms'):>7} {ratio(row, 'cupy_ms'):>7} "
                f"{ratio(row, 'per_image_ms'):>9} {ratio(row, 'per_image_table_ms'):>6}"
                f"{nhwc_columns(row)}"
            )
        x = copy = None
        torch.cuda.empty_cache()


def cpu_row(data, k, cv2, scipy_ndimage, tv, threads, quick):
    """One CPU case: constmem, OpenCV and scipy on the same NHWC images with k taps; for one
    image a call, also torchvision and constmem on it as a [C, H, W] tensor (where importable)."""
    sigma, t = taps(k)
    x = torch.from_numpy(data)
    row = {"device": "cpu", "cpu": cpu_model(), "shape": list(data.shape)}
    row.update({"layout": "NHWC", "dtype": data.dtype.name, "k": k, "threads": threads})

    def ours():
        cm.gaussian_blur(x, k, layout="channels_last")

    if cv2 is None:
        row["constmem_ms"] = cpu_ms(ours)
    else:

        def cv2_blur():
            for image in data:  # [H, W, C]: OpenCV's interleaved channels
                cv2.GaussianBlur(image, (k, k), sigma, sigma, borderType=cv2.BORDER_REFLECT_101)

        # Alternating call by call: wall times with both threads swing between runs on a shared
        # machine, the ratio much less.
        measured = alternating_ratios(ours, cv2_blur, rounds=5 if quick else 25, calls=1, warmup=2)
        row["constmem_ms"] = measured["constmem_us"] / 1e3
        row["cv2_ms"] = measured["baseline_us"] / 1e3
        row["cv2_ratio_median"] = 1 / measured["ratio_median"]
    if scipy_ndimage is not None and (k <= 9 or not quick):
        w = t.astype(np.float32 if data.dtype == np.float32 else np.float64)

        def scipy_blur():
            tmp = scipy_ndimage.correlate1d(data, w, axis=-2, mode="mirror")
            scipy_ndimage.correlate1d(tmp, w, axis=-3, mode="mirror")

        row["scipy_ms"] = cpu_ms(scipy_blur, repetitions=3)
    if tv is not None and data.shape[0] == 1:
        chw = x[0].permute(2, 0, 1).contiguous()
        row["constmem_chw_ms"] = cpu_ms(lambda: cm.gaussian_blur(chw, k))
        row["torchvision_chw_ms"] = cpu_ms(
            lambda: tv.gaussian_blur(chw, [k, k], [sigma, sigma]), repetitions=5
        )
    return row


def cpu_time_row(data, k, cv2, repetitions=15):
    """One CPU case in one thread's CPU time: constmem and OpenCV alternating, min and median.

    Small batches are called several times a measurement (at least 2 M elements), the time a call.
    """
    sigma, _ = taps(k)
    x = torch.from_numpy(data)
    calls = max(1, 2_000_000 // data.size)

    def ours():
        for _ in range(calls):
            cm.gaussian_blur(x, k, layout="channels_last")

    def theirs():
        for _ in range(calls):
            for image in data:
                cv2.GaussianBlur(image, (k, k), sigma, sigma, borderType=cv2.BORDER_REFLECT_101)

    times = {ours: [], theirs: []}
    ours()
    theirs()
    for _ in range(repetitions):
        for fn, measured in times.items():
            start = time.thread_time()
            fn()
            measured.append((time.thread_time() - start) * 1e3 / calls)
    row = {"device": "cpu", "cpu": cpu_model(), "shape": list(data.shape), "layout": "NHWC"}
    row.update({"dtype": data.dtype.name, "k": k, "threads": 1, "clock": "thread_time"})
    for name, measured in (("constmem", times[ours]), ("cv2", times[theirs])):
        row[f"{name}_cpu_ms_min"] = min(measured)
        row[f"{name}_cpu_ms_median"] = statistics.median(measured)
    return row


def cpu_cases(args, results):
    cv2 = optional("cv2")
    scipy_ndimage = optional("scipy.ndimage")
    tv = optional("torchvision.transforms.v2.functional")
    if args.cpu_time:
        if cv2 is None:
            raise SystemExit("--cpu-time compares with OpenCV: install opencv-python-headless")
        torch.set_num_threads(1)
    threads = torch.get_num_threads()
    if cv2 is not None:
        cv2.setNumThreads(threads)
    print(f"\nCPU ({threads} threads): constmem's time, and the others' as multiples of it")
    print(f"{'shape':>20} {'dtype':>7} {'k':>3} {'constmem ms':>11} {'cv2':>7} {'scipy':>7}")
    # A batch, and one image a call as a data loader's transform blurs it.
    shapes = [(2, 270, 480, 3)] if args.quick else [(8, 540, 960, 3), (1, 224, 224, 3)]
    rng = np.random.default_rng(0)
    for shape, dtype, k in itertools.product(shapes, (np.float32, np.uint8), CPU_KS):
        data = rng.integers(0, 256, shape) if dtype == np.uint8 else rng.random(shape)
        data = data.astype(dtype)
        if args.cpu_time:
            row = cpu_time_row(data, k, cv2)
            results.append(row)
            print(
                f"{shape!s:>20} {row['dtype']:>7} {k:>3} one thread's CPU time, constmem "
                f"{row['constmem_cpu_ms_min']:.2f} ms (median "
                f"{row['constmem_cpu_ms_median']:.2f}), OpenCV {row['cv2_cpu_ms_min']:.2f} "
                f"(median {row['cv2_cpu_ms_median']:.2f}): "
                f"{row['cv2_cpu_ms_min'] / row['constmem_cpu_ms_min']:.2f}x"
            )
            continue
        row = cpu_row(data, k, cv2, scipy_ndimage, tv, threads, args.quick)
        results.append(row)
        cv2_ratio = f"{row['cv2_ratio_median']:.2f}x" if "cv2_ratio_median" in row else "-"
        chw = ""
        if "torchvision_chw_ms" in row:
            chw = (
                f"   [C, H, W]: constmem {row['constmem_chw_ms']:.3f} ms, torchvision "
                f"{row['torchvision_chw_ms'] / row['constmem_chw_ms']:.1f}x"
            )
        print(
            f"{shape!s:>20} {row['dtype']:>7} {k:>3} {row['constmem_ms']:>11.3f} "
            f"{cv2_ratio:>7} {ratio(row, 'scipy_ms'):>7}{chw}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the measurements to this file")
    parser.add_argument("--quick", action="store_true", help="small shapes only (a smoke test)")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--cpu-only", action="store_true")
    only.add_argument("--gpu-only", action="store_true")
    parser.add_argument("--cpu-time", action="store_true", help="one thread's CPU time (CPU only)")
    only.add_argument(
        "--layouts", action="store_true", help="constmem alone, NCHW and NHWC, k = 3 to 9 (GPU)"
    )
    args = parser.parse_args()
    results = []
    start = time.perf_counter()
    if not args.cpu_only:
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA device: use --cpu-only")
        print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
        if args.layouts:
            layout_cases(results)
        else:
            gpu_cases(args, results)
    if not args.gpu_only and not args.layouts:
        cpu_cases(args, results)
    print(f"\n{time.perf_counter() - start:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

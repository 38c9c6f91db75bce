"""constmem's PyTorch ops on DTensors, in worker processes on this machine (127.0.0.1 only): every
op and each sharding (a batch axis, channels, the filtered axis, which is gathered, a 2 x 2 mesh
with 4 processes), static and tensor tables, per-image taps. Each result, gathered with
full_tensor(), is compared bit for bit with the single-process call, its placements with the ones
the op's axes give, the gradients to the data and to tensor tables with the single-process ones;
then a module with learned taps trains under FSDP2 as it does in one process, and torch.compile
traces a DTensor call. Each worker prints its failures; this script prints one RESULT line.

    python tests/gpu/sharding_torch.py                  # NCCL on every visible GPU, else 2 gloo
    python tests/gpu/sharding_torch.py --world 4 --backend gloo
    python tests/gpu/sharding_torch.py --sweep          # more shapes and forms (slower)

With one GPU the mesh has one device (world size 1), which takes the same code path.
SHARDING_TRACE=1 names each check as it starts.
"""

import argparse
import os
import socket
import subprocess
import sys
import time
from datetime import timedelta

import numpy as np

STEPS = 3  # FSDP2 training steps


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Checks:
    """Counts checks and keeps each failure's description."""

    def __init__(self):
        self.passed = 0
        self.failures = []

    def run(self, name, check, *args):
        if os.environ.get("SHARDING_TRACE"):
            print("RUN", name, flush=True)
        try:
            check(*args)
            self.passed += 1
        except Exception as error:  # every failure is reported, the others still run
            self.failures.append(f"{name}: {type(error).__name__}: {str(error)[:400]}")
            print(f"FAILED {self.failures[-1]}", flush=True)


def parse(text, ndim):
    """Placements from "S0,R": Shard(d), Replicate or Partial (P) per mesh dimension."""
    from torch.distributed.tensor import Partial, Replicate, Shard

    kinds = {"R": Replicate, "P": Partial}
    out = [Shard(int(p[1:])) if p.startswith("S") else kinds[p]() for p in text.split(",")]
    assert len(out) == ndim, (text, ndim)
    return tuple(out)


def on_unit_dims(placements, given, mesh):
    """A mesh dimension of size 1 splits nothing: the data keeps its Shard there, else Replicate."""
    from torch.distributed.tensor import Replicate, Shard

    return tuple(
        p if mesh.size(d) > 1 else g if isinstance(g, Shard) else Replicate()
        for d, (p, g) in enumerate(zip(placements, given, strict=True))
    )


def cases(cm, torch, sweep):
    """(name, call(x, *tables, **attrs), x shape, x dtype, tables, attrs, [(in, out)]) per 1-D mesh.

    Each table is (values, int32); `in` and `out` are placement strings of a 1-D mesh. Split axes
    hold a multiple of 4.
    """
    rng = np.random.default_rng(3)
    taps = rng.standard_normal(5).tolist()
    f32 = torch.float32
    yield ("frobulate", cm.frobulate, (8, 12), f32, [([3, -1, 4], True)], {},
           [("S0", "S0"), ("S1", "S1"), ("R", "R"), ("P", "R")])  # fmt: skip
    yield ("polyval", lambda x, c: cm.polyval(c, x), (8, 12), f32,
           [([0.5, -1.0, 2.0, 0.25], False)], {}, [("S0", "S0"), ("S1", "S1")])  # fmt: skip
    # Shards of unequal sizes stay split, but where their items own blocks of a table.
    yield ("fir_filter uneven", cm.fir_filter, (7, 10), f32, [(taps, False)], {}, [("S0", "S0")])
    yield ("separable_filter per_image uneven", cm.separable_filter, (3, 2, 6, 5), f32,
           [(taps[:3] * 3, False), (taps * 3, False)], {"taps": "per_image"},
           [("S0", "R"), ("S1", "S1")])  # fmt: skip
    yield ("interpolate", cm.interpolate, (8, 12), f32, [([0.0, 1.0, 0.25, 2.0, -1.0], False)],
           {"lo": -1.0, "hi": 2.0}, [("S0", "S0"), ("S1", "S1")])  # fmt: skip
    yield ("fir_filter SAME", cm.fir_filter, (8, 32), f32, [(taps, False)], {"padding": "SAME"},
           [("S0", "S0"), ("S1", "R"), ("P", "R")])  # fmt: skip
    yield ("fir_filter VALID", cm.fir_filter, (8, 32), f32, [(taps, False)],
           {"padding": "VALID"}, [("S0", "S0"), ("S1", "R")])  # fmt: skip
    yield ("upfirdn", cm.upfirdn, (8, 32), f32, [(taps, False)], {"up": 3, "down": 2},
           [("S0", "S0"), ("S1", "R")])  # fmt: skip
    rows, columns = rng.standard_normal(3).tolist(), rng.standard_normal(5).tolist()
    yield ("separable_filter", cm.separable_filter, (4, 4, 8, 12), f32,
           [(rows, False), (columns, False)], {},
           [("S0", "S0"), ("S1", "S1"), ("S2", "R"), ("S3", "R")])  # fmt: skip
    yield ("separable_filter channels_last zeros", cm.separable_filter, (4, 8, 12, 4), f32,
           [(rows, False), (columns, False)], {"layout": "channels_last", "border": "zeros"},
           [("S3", "S3"), ("S1", "R")])  # fmt: skip
    per_rows, per_columns = rng.standard_normal(12).tolist(), rng.standard_normal(20).tolist()
    yield ("separable_filter per_image", cm.separable_filter, (4, 4, 8, 12), f32,
           [(per_rows, False), (per_columns, False)], {"taps": "per_image"},
           [("S0", "S0"), ("S1", "S1"), ("S2", "R")])  # fmt: skip
    if sweep:
        yield ("fir_filter float64", cm.fir_filter, (4, 8, 32), torch.float64,
               [(taps * 3, False)], {}, [("S0", "S0"), ("S1", "S1"), ("S2", "R")])  # fmt: skip
        yield ("separable_filter uint8 replicate", cm.separable_filter, (4, 4, 8, 12),
               torch.uint8, [(rows, False), (columns, False)], {"border": "replicate"},
               [("S0", "S0"), ("S2", "R")])  # fmt: skip
        yield ("upfirdn down", cm.upfirdn, (4, 64), f32, [(taps * 2, False)],
               {"up": 2, "down": 5}, [("S0", "S0"), ("S1", "R")])  # fmt: skip


def mesh_cases(cm, torch):
    """Cases of a 2 x 2 mesh: (name, call, shape, dtype, tables, attrs, [(in, out)])."""
    rng = np.random.default_rng(4)
    taps = rng.standard_normal(4).tolist()
    f32 = torch.float32
    shardings = [("S0,S1", "S0,S1"), ("S0,S2", "S0,R"), ("S0,S0", "S0,S0"), ("S1,P", "S1,R")]
    yield ("fir_filter 2-D", cm.fir_filter, (8, 4, 32), f32, [(taps, False)], {}, shardings)
    yield ("polyval 2-D", lambda x, c: cm.polyval(c, x), (8, 12), f32,
           [([1.0, -0.5, 0.25], False)], {}, [("S1,S0", "S1,S0")])  # fmt: skip
    # 8 images over two axes: the tables split with the first; a split of the second would
    # interleave their blocks, so it is gathered.
    rows, columns = rng.standard_normal(24).tolist(), rng.standard_normal(40).tolist()
    yield ("separable_filter per_image 2-D", cm.separable_filter, (4, 2, 4, 8, 12), f32,
           [(rows, False), (columns, False)], {"taps": "per_image"},
           [("S0,S0", "S0,S0"), ("S0,S1", "S0,R"), ("S2,S0", "S2,S0")])  # fmt: skip


def table_forms(tables, sweep):
    """The forms to call with: every table static, every table a tensor, and mixed."""
    forms = [("list",) * len(tables), ("tensor",) * len(tables)]
    if len(tables) > 1:
        forms.append(("tensor", "numpy"))
    elif sweep:
        forms.append(("numpy",))
    return forms


def run_case(torch, mesh, device, checks, case, sweep):
    from torch.distributed.tensor import DTensor, Partial, Replicate, distribute_tensor

    name, call, shape, dtype, tables, attrs, shardings = case
    g = torch.Generator().manual_seed(len(name) + sum(shape))
    if dtype == torch.uint8:
        x = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
    else:
        x = torch.randn(shape, generator=g, dtype=dtype)
    x = x.to(device)
    floating = x.is_floating_point()
    table_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    plain = [torch.tensor(v, dtype=torch.int32 if i else table_dtype) for v, i in tables]
    trainable = [floating and not i for _, i in tables]
    for forms in table_forms(tables, sweep):
        for text_in, text_out in shardings:
            label = f"{name} {'/'.join(forms)} {text_in}"
            placements = parse(text_in, mesh.ndim)

            def check(forms=forms, placements=placements, text_out=text_out):
                want_grad = [f == "tensor" and t for f, t in zip(forms, trainable, strict=True)]
                x_ref = x.clone().requires_grad_(floating)
                ref_tables = [
                    p.to(device).requires_grad_(w) for p, w in zip(plain, want_grad, strict=True)
                ]
                expected = call(x_ref, *ref_tables, **attrs)
                if any(isinstance(p, Partial) for p in placements):
                    # The first of each Partial group holds the shard, the others zeros: their
                    # sum is the shard exactly.
                    summed = [d for d, p in enumerate(placements) if isinstance(p, Partial)]
                    kept = [Replicate() if isinstance(p, Partial) else p for p in placements]
                    local = distribute_tensor(x, mesh, kept).to_local()
                    if any(mesh.get_coordinate()[d] for d in summed):
                        local = torch.zeros_like(local)
                    dx = DTensor.from_local(
                        local, mesh, placements, shape=x.shape, stride=x.stride()
                    )
                else:
                    dx = distribute_tensor(x, mesh, placements)
                if floating:
                    dx = dx.detach().requires_grad_()
                given = []
                for form, (values, _), p, w in zip(forms, tables, plain, want_grad, strict=True):
                    if form == "tensor":
                        replicated = parse(",".join(["R"] * mesh.ndim), mesh.ndim)
                        t = distribute_tensor(p.to(device), mesh, replicated)
                        given.append(t.detach().requires_grad_(w))
                    elif form == "numpy":
                        given.append(np.asarray(values, p.numpy().dtype))
                    else:
                        given.append(values)
                out = call(dx, *given, **attrs)
                want = on_unit_dims(parse(text_out, mesh.ndim), placements, mesh)
                assert isinstance(out, DTensor), type(out)
                assert tuple(out.placements) == want, (out.placements, want)
                full = out.full_tensor()
                assert full.dtype == expected.dtype and full.shape == expected.shape
                assert torch.equal(full, expected.detach()), float(
                    (full.double() - expected.double()).abs().max()
                )
                if not floating:
                    return
                cotangent = torch.randn(expected.shape, generator=g, dtype=dtype).to(device)
                inputs_ref = [x_ref, *(t for t, w in zip(ref_tables, want_grad, strict=True) if w)]
                inputs = [dx, *(t for t, w in zip(given, want_grad, strict=True) if w)]
                refs = torch.autograd.grad(expected, inputs_ref, cotangent)
                grads = torch.autograd.grad(
                    out, inputs, distribute_tensor(cotangent, mesh, out.placements)
                )
                for i, (grad, ref, t) in enumerate(zip(grads, refs, inputs, strict=True)):
                    # The input's placements, Replicate for a Partial input.
                    reduced = tuple(Replicate() if p.is_partial() else p for p in t.placements)
                    assert tuple(grad.placements) == reduced, (i, grad.placements)
                    full = grad.full_tensor()
                    if i == 0:  # the data's: the same formula on each shard's rows
                        assert torch.equal(full, ref), (i, float((full - ref).abs().max()))
                    else:  # a table's: sums over the shards, in another order
                        torch.testing.assert_close(full, ref, rtol=1e-4, atol=1e-5)

            checks.run(label, check)


def check_functions(torch, cm, mesh, device, checks):
    """gaussian_blur, resample_poly (built on the ops) and a `_static` schema keep a batch split."""
    from torch.distributed.tensor import Shard, distribute_tensor

    g = torch.Generator().manual_seed(9)
    images = torch.rand((4, 3, 16, 12), generator=g).to(device)
    signal = torch.randn((8, 40), generator=g).to(device)
    static = torch.ops.constmem.fir_filter_static.default  # the schema's list, called directly
    for name, call, x in [
        ("gaussian_blur", lambda t: cm.gaussian_blur(t, 5, 1.5), images),
        ("resample_poly", lambda t: cm.resample_poly(t, 3, 2), signal),
        ("fir_filter_static", lambda t: static(t, [0.25, 0.5, -0.125], "SAME"), signal),
    ]:

        def check(call=call, x=x):
            out = call(distribute_tensor(x, mesh, [Shard(0)] * mesh.ndim))
            assert tuple(out.placements) == (Shard(0),) * mesh.ndim
            assert torch.equal(out.full_tensor(), call(x))

        checks.run(name, check)


def check_fft(torch, cm, mesh, device, checks):
    """The FFT route of long filters runs on DTensors through torch's own FFT, which DTensor
    splits as it splits any torch function: within float32 rounding of the single-process call,
    whose FFTs may take other plans."""
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    g = torch.Generator().manual_seed(13)
    x = torch.randn((4, 512), generator=g).to(device)
    taps = (torch.randn(40, generator=g) / 8).to(device)
    for name, call in [
        ("fir_filter", lambda x, t: cm.fir_filter(x, t, method="fft")),
        ("upfirdn", lambda x, t: cm.upfirdn(x, t, up=3, down=2, method="fft")),
    ]:
        for split in (Shard(0), Shard(1)):

            def check(call=call, split=split):
                x_ref, taps_ref = x.clone().requires_grad_(), taps.clone().requires_grad_()
                expected = call(x_ref, taps_ref)
                dx = distribute_tensor(x, mesh, [split] * mesh.ndim).requires_grad_()
                dtaps = distribute_tensor(taps, mesh, [Replicate()] * mesh.ndim)
                dtaps.requires_grad_()
                out = call(dx, dtaps)
                close = {"rtol": 1e-4, "atol": 1e-4}
                torch.testing.assert_close(out.full_tensor(), expected.detach(), **close)
                cotangent = torch.randn(expected.shape, generator=g).to(device)
                refs = torch.autograd.grad(expected, [x_ref, taps_ref], cotangent)
                grads = torch.autograd.grad(
                    out, [dx, dtaps], distribute_tensor(cotangent, mesh, out.placements)
                )
                for grad, ref in zip(grads, refs, strict=True):
                    torch.testing.assert_close(grad.full_tensor(), ref, **close)

            checks.run(f"{name} method=fft {split}", check)


def check_refusals(torch, cm, mesh, device, checks):
    """A plain tensor table beside DTensor data (or the other way) is a ValueError naming it."""
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    x = torch.ones((8, 16), device=device)
    dx = distribute_tensor(x, mesh, [Shard(0)] * mesh.ndim)
    taps = torch.ones(3, device=device)
    dtaps = distribute_tensor(taps, mesh, [Replicate()] * mesh.ndim)
    for data, table, message in [
        (dx, taps, "taps must be a DTensor (Replicate, say) or a static table when x is a DTensor"),
        (x, dtaps, "taps is a DTensor: x must be one too"),
    ]:

        def check(data=data, table=table, message=message):
            try:
                cm.fir_filter(data, table)
            except ValueError as error:
                assert str(error).startswith(message), str(error)
            else:
                raise AssertionError("no ValueError")

        checks.run(f"refusal: {message}", check)


def check_compile(torch, cm, mesh, device, checks, backend):
    """torch.compile traces DTensor calls (fullgraph): a tensor, a list and a NumPy table, grads."""
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    g = torch.Generator().manual_seed(11)
    x = torch.randn((8, 32), generator=g).to(device)
    taps = torch.randn(5, generator=g).to(device)
    table = np.array([3, -1, 4], np.int32)

    def forward(x, taps):
        y = cm.polyval([0.5, -1.0, 2.0], cm.fir_filter(x, taps, padding="SAME"))
        return cm.frobulate(y, table)

    def check(split, kept):
        # Static shapes: a recompile for the second placement with dynamic shapes fails in
        # Inductor's codegen ("expected [s] to have been codegen-ed").
        compiled = torch.compile(forward, fullgraph=True, backend=backend, dynamic=False)
        dx = distribute_tensor(x, mesh, [split] * mesh.ndim).requires_grad_()
        dtaps = distribute_tensor(taps, mesh, [Replicate()] * mesh.ndim).requires_grad_()
        out = compiled(dx, dtaps)
        x_ref, taps_ref = x.clone().requires_grad_(), taps.clone().requires_grad_()
        expected = forward(x_ref, taps_ref)
        assert tuple(out.placements) == on_unit_dims((kept,) * mesh.ndim, dx.placements, mesh)
        assert torch.equal(out.full_tensor(), expected.detach())
        out.sum().backward()
        expected.sum().backward()
        assert dx.grad.placements == dx.placements
        assert torch.equal(dx.grad.full_tensor(), x_ref.grad)
        torch.testing.assert_close(dtaps.grad.full_tensor(), taps_ref.grad, rtol=1e-4, atol=1e-5)

    # Rows stay split; the filtered axis is gathered inside the compiled graph.
    for split, kept in [(Shard(0), Shard(0)), (Shard(1), Replicate())]:
        checks.run(f"torch.compile {backend} {split}", check, split, kept)


def check_fsdp(torch, cm, mesh, device, checks):
    """A module with learned taps and coefficients trains under FSDP2 as in one process."""
    from torch.distributed.fsdp import fully_shard

    class Smoother(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.taps = torch.nn.Parameter(torch.tensor([0.1, 0.2, 0.4, 0.2, 0.1]))
            self.coeffs = torch.nn.Parameter(torch.tensor([0.25, 1.0, 0.0]))

        def forward(self, x):
            return cm.polyval(self.coeffs, cm.fir_filter(x, self.taps))

    g = torch.Generator().manual_seed(12)
    x = torch.randn((8, 32), generator=g).to(device)
    target = torch.randn((8, 32), generator=g).to(device)

    def train(model, x, target):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        for _ in range(STEPS):
            optimizer.zero_grad()
            ((model(x) - target) ** 2).mean().backward()
            optimizer.step()
        return model

    def check():
        single = train(Smoother().to(device), x, target)
        model = fully_shard(Smoother().to(device), mesh=mesh)
        rank, world = torch.distributed.get_rank(), mesh.size()
        rows = slice(rank * 8 // world, (rank + 1) * 8 // world)
        train(model, x[rows], target[rows])
        for name in ("taps", "coeffs"):
            learned = getattr(model, name).full_tensor()
            torch.testing.assert_close(learned, getattr(single, name), rtol=1e-6, atol=1e-7)
            assert not torch.equal(learned, getattr(Smoother(), name).to(device))

    checks.run("FSDP2", check)


def worker(rank, world, port, backend, sweep):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    import constmem.torch as cm
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    gpu = backend == "nccl"
    if gpu:
        torch.cuda.set_device(rank)
    device = f"cuda:{rank}" if gpu else "cpu"
    # A check that fails on some processes leaves the others in a collective: a timeout ends it.
    dist.init_process_group(backend, rank=rank, world_size=world, timeout=timedelta(seconds=150))
    kind = "cuda" if gpu else "cpu"
    checks = Checks()
    start = time.perf_counter()
    mesh = init_device_mesh(kind, (world,))
    if world != 4 or sweep:  # 4 processes: the 2 x 2 mesh (the 1-D mesh's cases with --sweep)
        for case in cases(cm, torch, sweep):
            run_case(torch, mesh, device, checks, case, sweep)
        check_functions(torch, cm, mesh, device, checks)
        check_refusals(torch, cm, mesh, device, checks)
        check_fft(torch, cm, mesh, device, checks)
    if world == 4:
        square = init_device_mesh(kind, (2, 2))
        for case in mesh_cases(cm, torch):
            run_case(torch, square, device, checks, case, sweep)
    if world <= 2 or sweep:
        check_fsdp(torch, cm, mesh, device, checks)
        check_compile(torch, cm, mesh, device, checks, "aot_eager")
        if sweep and world <= 2:  # Inductor's C++ compiles, once per process
            check_compile(torch, cm, mesh, device, checks, "inductor")
    seconds = time.perf_counter() - start
    print(f"CHECKS rank={rank} passed={checks.passed} failed={len(checks.failures)} "
          f"seconds={seconds:.1f}", flush=True)  # fmt: skip
    # Every process reaches the teardown before any closes its connections: gloo aborts a
    # process whose peer went first (seen under load).
    dist.barrier()
    dist.destroy_process_group()
    return 1 if checks.failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=int, help="processes (default: GPUs, else 2)")
    parser.add_argument("--backend", choices=("gloo", "nccl"), help="default: nccl with GPUs")
    parser.add_argument("--sweep", action="store_true", help="more shapes and forms")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=480)
    args = parser.parse_args()
    if args.worker is not None:
        return worker(args.worker, args.world, args.port, args.backend, args.sweep)
    backend = args.backend
    if backend is None:
        import torch

        backend = "nccl" if torch.cuda.is_available() else "gloo"
    world = args.world
    if world is None:
        import torch

        world = torch.cuda.device_count() if backend == "nccl" else 2
    # No NVLink multicast (NVLS) in NCCL nor in symmetric memory: the machines lent have it off.
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1")
    env.setdefault("OMP_NUM_THREADS", "1")  # the processes share the cores
    port = free_port()
    command = [sys.executable, os.path.abspath(__file__), "--world", str(world), "--port",
               str(port), "--backend", backend] + (["--sweep"] if args.sweep else [])  # fmt: skip
    start = time.perf_counter()
    procs = [
        subprocess.Popen(
            [*command, "--worker", str(rank)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in range(world)
    ]
    outputs, codes = [], []
    for proc in procs:
        try:
            outputs.append(proc.communicate(timeout=args.timeout)[0])
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            outputs.append(proc.communicate()[0] + "\nTIMEOUT")
        codes.append(proc.returncode)
    lines = [line for out in outputs for line in out.splitlines()]
    summaries = [line for line in lines if line.startswith("CHECKS")]
    failures = [line for line in lines if line.startswith("FAILED")]
    passed = sum(int(line.split("passed=")[1].split()[0]) for line in summaries)
    print("\n".join(summaries))
    ok = not any(codes) and len(summaries) == world and not failures
    if not ok:
        for rank, out in enumerate(outputs):
            if codes[rank] or "CHECKS" not in out:
                print(f"--- rank {rank} exit {codes[rank]}\n{out[-3000:]}")
        print("\n".join(failures[:40]))
    print(
        f"RESULT sharding_torch backend={backend} world={world} checks_passed={passed} "
        f"failed={len(failures)} exit_codes={codes} seconds={time.perf_counter() - start:.1f} "
        f"{'PASS' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

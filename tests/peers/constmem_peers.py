# SPDX-License-Identifier: Apache-2.0
"""A pytest plugin that runs torchvision's and torchaudio's own tests on constmem's drop-ins.

scripts/peer-tests.sh loads it (`-p constmem_peers`) into a pytest run of a torchvision or
torchaudio checkout's test files. Before their modules are imported it puts constmem's functions
and transforms in place of the peers' own:

- torchvision.transforms.v2.functional: `gaussian_blur` and its kernels `gaussian_blur_image`
  and `gaussian_blur_video` become `constmem.torch.gaussian_blur`;
- torchvision.transforms.v2: `GaussianBlur` becomes `constmem.torch.transforms.GaussianBlur`;
- torchaudio.functional: `resample` becomes `constmem.torch.resample`;
- torchaudio.transforms: `Resample` becomes `constmem.torch.transforms.Resample`.

The tests call these through the modules' attributes, so no dispatch registration is needed.
With CONSTMEM_PEERS_SWAP=0 nothing is swapped: the peers' own functions run (the baseline,
which checks that the test files match the installed torchvision and torchaudio).

CPU only: tests parametrised on a CUDA device (their id or a `needs_cuda` mark) are deselected.
`torch.jit.script`'s deprecation warning (PyTorch 2.11) is ignored, as the peers' suites must on
that PyTorch: torchvision's test module turns every warning into an error.

At the end it prints the counts and each failure's reason on one line, and writes them as JSON
to $CONSTMEM_PEERS_REPORT where that is set.
"""

from __future__ import annotations

import json
import os
import warnings

import pytest

_TV_F = "torchvision.transforms.v2.functional"
_SWAPS = (
    (_TV_F, "gaussian_blur", "constmem.torch", "gaussian_blur"),
    (_TV_F, "gaussian_blur_image", "constmem.torch", "gaussian_blur"),
    (_TV_F, "gaussian_blur_video", "constmem.torch", "gaussian_blur"),
    ("torchvision.transforms.v2", "GaussianBlur", "constmem.torch.transforms", "GaussianBlur"),
    ("torchaudio.functional", "resample", "constmem.torch", "resample"),
    ("torchaudio.transforms", "Resample", "constmem.torch.transforms", "Resample"),
)


def _swap() -> list[str]:
    """Puts constmem's functions and transforms in place of the peers' that are installed."""
    import importlib

    done = []
    for module_name, name, constmem_module, constmem_name in _SWAPS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        replacement = getattr(importlib.import_module(constmem_module), constmem_name)
        setattr(module, name, replacement)
        done.append(f"{module_name}.{name} -> {constmem_module}.{constmem_name}")
    return done


def pytest_configure(config: pytest.Config) -> None:
    # torchvision's conftest registers it; the excerpts of its files may come without one.
    config.addinivalue_line("markers", "needs_cuda: a test on a CUDA device (deselected here)")
    swap = os.environ.get("CONSTMEM_PEERS_SWAP", "1") != "0"
    config._constmem_peers_swapped = _swap() if swap else []


def pytest_report_header(config: pytest.Config) -> list[str]:
    import torch

    versions = [f"torch {torch.__version__}"]
    for name in ("torchvision", "torchaudio"):
        try:
            versions.append(f"{name} {__import__(name).__version__}")
        except ImportError:
            pass
    swapped = config._constmem_peers_swapped
    lines = ["constmem peers: " + ", ".join(versions)]
    lines += [f"  swapped {s}" for s in swapped] or ["  nothing swapped: the peers' own functions"]
    return lines


def _is_cuda(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    ids = callspec.id if callspec is not None else ""
    return item.get_closest_marker("needs_cuda") is not None or "cuda" in ids.lower()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cuda = [item for item in items if _is_cuda(item)]
    if cuda:
        config.hook.pytest_deselected(items=cuda)
        items[:] = [item for item in items if not _is_cuda(item)]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r"`torch\.jit\.script` is deprecated", category=DeprecationWarning
        )
        return (yield)


def _reason(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " / ".join(lines[:2])[:300]


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    stats = terminalreporter.stats
    counts = {
        key: len([r for r in stats.get(key, []) if getattr(r, "when", "call") in ("call", "setup")])
        for key in ("passed", "failed", "skipped", "error", "xfailed", "xpassed", "deselected")
    }
    counts["deselected"] = len(stats.get("deselected", []))
    failures = [
        {"test": r.nodeid, "reason": _reason(r)}
        for r in stats.get("failed", []) + stats.get("error", [])
    ]
    write = terminalreporter.write_line
    terminalreporter.section("constmem peers")
    write(
        "swapped for constmem's" if config._constmem_peers_swapped else "baseline (nothing swapped)"
    )
    write(
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped "
        f"({counts['error']} errors, {counts['deselected']} deselected: CUDA or not selected)"
    )
    for failure in failures:
        write(f"FAIL {failure['test']}: {failure['reason']}")
    path = os.environ.get("CONSTMEM_PEERS_REPORT")
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"counts": counts, "failures": failures}, f, indent=1)

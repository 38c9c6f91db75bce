# SPDX-License-Identifier: Apache-2.0
"""Which op library the package loads from the prebuilt distributions, and the driver check.

Each distribution (constmem-<framework>-cu<N>) is an import package holding one library; the
package takes the newest CUDA that the machine's driver runs, and refuses, naming the driver, a
library whose kernels it cannot run. Imports no framework.
"""

import json

import pytest
from constmem import _libraries


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """Installs fake distributions of a framework "probe" of the given variants.

    No source build is visible, and no real distribution can be (they are another framework's).
    """
    monkeypatch.setattr(_libraries, "_PACKAGE", str(tmp_path / "constmem"))
    monkeypatch.setitem(_libraries.LIBRARIES, "probe", "_constmem_probe")
    monkeypatch.setitem(_libraries._DISPLAY, "probe", "Probe")
    monkeypatch.syspath_prepend(str(tmp_path))

    def install(*variants):
        for variant in variants:
            package = tmp_path / f"constmem_probe_{variant}"
            package.mkdir()
            (package / "__init__.py").write_text("")
            (package / "_constmem_probe.so").write_bytes(b"")
            cuda = f"{variant[2:]}.0"
            info = {"probe": None, "gpu_kernels": True, "cuda": cuda, "test_hooks": False}
            (package / "_constmem_probe.json").write_text(json.dumps(info))

    return install


def driver(monkeypatch, version):
    monkeypatch.setattr(_libraries, "driver_cuda_version", lambda: version)


@pytest.mark.parametrize(
    ("variants", "version", "chosen"),
    [
        (("cu13", "cu12"), 13000, "cu13"),
        (("cu13", "cu12"), 12040, "cu12"),  # an R550 driver: CUDA 12.4
        (("cu13", "cu12"), None, "cu13"),  # no driver: CPU kernels, either one
        (("cu12",), 13010, "cu12"),
    ],
)
def test_the_newest_cuda_the_driver_runs(installed, monkeypatch, variants, version, chosen):
    installed(*variants)
    driver(monkeypatch, version)
    path = _libraries.library_path("probe")
    assert f"constmem_probe_{chosen}" in path
    info = _libraries.library_info("probe")
    assert info["distribution"] == f"constmem-probe-{chosen}"
    _libraries.check_framework_version("probe", None)  # loads


def test_a_driver_too_old_is_named(installed, monkeypatch):
    installed("cu13")
    driver(monkeypatch, 12040)
    monkeypatch.setattr(_libraries, "_driver_release", lambda: "550.127.05")
    with pytest.raises(ImportError) as error:
        _libraries.check_framework_version("probe", None)
    message = str(error.value)
    assert "CUDA 13.0 kernels" in message and "550.127.05" in message
    assert "supports CUDA 12.4" in message and "constmem[probe-cu12]" in message


def test_no_library_says_what_to_install(installed):
    installed()
    with pytest.raises(ImportError, match=r"pip install constmem\[probe\]"):
        _libraries.check_framework_version("probe", None)

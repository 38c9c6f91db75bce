"""constmem's core used from outside the repository: installed with CMake and found with
find_package, or added with add_subdirectory; and `constmem.sysconfig` pointing at it."""

import os
import shutil
import subprocess

import constmem.sysconfig
import pytest
from subprocesses import ROOT

BUILD = os.path.join(ROOT, os.environ.get("CONSTMEM_BUILD_DIR", "build"))
CONSUMER = os.path.join(ROOT, "tests", "consumer")


def cmake(*args, cwd=None):
    env = dict(os.environ)
    if os.path.exists("/usr/local/cuda/bin/nvcc"):
        env["PATH"] = env.get("PATH", "") + os.pathsep + "/usr/local/cuda/bin"
    result = subprocess.run(
        ["cmake", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def installed_prefix(tmp_path_factory):
    if not os.path.exists(os.path.join(BUILD, "cmake_install.cmake")):
        pytest.skip(f"no configured build in {BUILD}; run scripts/build.sh")
    prefix = tmp_path_factory.mktemp("prefix")
    cmake("--install", BUILD, "--component", "core", "--prefix", str(prefix))
    return prefix


def build_and_run_consumer(build_dir, *configure_args):
    cmake("-S", CONSUMER, "-B", str(build_dir), *configure_args)
    cmake("--build", str(build_dir), "-j", "2")
    out = subprocess.run([str(build_dir / "consumer_host")], capture_output=True, text=True)
    assert out.returncode == 0 and "consumer: by_value" in out.stdout, out.stdout + out.stderr
    cuda_built = (build_dir / "libconsumer_cuda.a").exists()
    assert cuda_built == bool(shutil.which("nvcc") or os.path.exists("/usr/local/cuda/bin/nvcc"))


def test_find_package_from_an_installed_prefix(installed_prefix, tmp_path):
    assert (installed_prefix / "include" / "constmem" / "bank.cuh").exists()
    build_and_run_consumer(tmp_path / "b", f"-Dconstmem_DIR={installed_prefix}/lib/cmake/constmem")


@pytest.mark.slow  # a CMake build of the consumer (about 8 s): scripts/test-slow.sh
def test_add_subdirectory_gives_the_core_alone(tmp_path):
    # No TensorFlow, tests or GPU kernels of constmem's own: only constmem::core.
    build_and_run_consumer(tmp_path / "b", f"-DCONSTMEM_SOURCE_DIR={ROOT}")
    cache = (tmp_path / "b" / "CMakeCache.txt").read_text()
    assert "CONSTMEM_BUILD_TF_OPS:BOOL=OFF" in cache and "CONSTMEM_BUILD_TESTS:BOOL=OFF" in cache


def test_sysconfig_points_at_the_headers():
    include = constmem.sysconfig.get_include()
    assert os.path.exists(os.path.join(include, "constmem", "constmem.cuh"))
    assert f"-I{include}" in constmem.sysconfig.get_compile_flags()
    assert os.path.exists(os.path.join(constmem.sysconfig.get_lib(), "_constmem_ops.so"))
    package = os.path.dirname(constmem.sysconfig.__file__)
    if os.path.isdir(os.path.join(package, "lib", "cmake")):  # an installed package
        assert os.path.exists(
            os.path.join(constmem.sysconfig.get_cmake_dir(), "constmemConfig.cmake")
        )
    else:
        with pytest.raises(FileNotFoundError, match="source checkout"):
            constmem.sysconfig.get_cmake_dir()


def test_one_version_number_everywhere():
    # pyproject.toml's version is the wheel's and the package's; CMake reads it and every op
    # library records it.
    import re

    import constmem

    pyproject = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    version = re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1)
    info = constmem.build_info()
    assert constmem.__version__ == version == info["constmem"]
    assert info["bindings"], "no op library built"
    for binding in info["bindings"].values():
        assert binding["constmem"] == version


# Each op, its table, and TensorFlow's DataType enum of each data type it takes: DT_FLOAT 1,
# DT_DOUBLE 2, DT_BFLOAT16 14, DT_HALF 19.
OPS = [
    ("Frobulate", "table", (1, 2)),
    ("Polyval", "coeffs", (1, 2, 14, 19)),
    ("FirFilter", "taps", (1, 2, 14, 19)),
]


@pytest.mark.parametrize("op,table,types", OPS)
def test_every_op_registers_its_three_forms_per_device_and_dtype(op, table, types):
    # CPU kernels always; GPU kernels when the library has them, the host form's table in host
    # memory.
    import constmem.tensorflow as cm
    from tensorflow.python.framework import kernels

    devices = ["CPU", "GPU"] if cm.build_info()["gpu_kernels"] else ["CPU"]
    for form in ("", "HostTable", "Attr"):
        registered = [  # XLA's compilation devices register kernels of their own once used
            k
            for k in kernels.get_registered_kernels_for_op(f"Constmem>{op}{form}").kernel
            if not k.device_type.startswith("XLA_")
        ]
        found = {(k.device_type, k.constraint[0].allowed_values.list.type[0]) for k in registered}
        assert found == {(d, t) for d in devices for t in types}, (form, found)
        for kernel in registered:
            expected = [table] if form == "HostTable" and kernel.device_type == "GPU" else []
            assert list(kernel.host_memory_arg) == expected, (form, kernel.device_type)

"""Every Python and C++ snippet in the README and docs/ runs (Python) or compiles (C++, with nvcc
where there is one). Shell blocks name commands that other tests run (the demo, the scripts)."""

import glob
import os
import re
import shutil
import subprocess

import pytest
from subprocesses import ROOT, run_python

DOCS = [os.path.join(ROOT, "README.md"), *sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))]


def snippets(language):
    found = []
    for path in DOCS:
        text = open(path, encoding="utf-8").read()
        for i, block in enumerate(re.findall(rf"```{language}\n(.*?)```", text, re.S)):
            found.append(pytest.param(block, id=f"{os.path.basename(path)}-{i}"))
    return found


def nvcc():
    return shutil.which("nvcc") or next(
        (p for p in ["/usr/local/cuda/bin/nvcc"] if os.path.exists(p)), None
    )


@pytest.mark.parametrize("code", snippets("python"))
def test_python_snippet_runs(code):
    run_python("-c", code)


@pytest.mark.parametrize("code", snippets("cpp"))
def test_cpp_snippet_compiles(code, tmp_path):
    compiler = nvcc()
    if compiler is None:
        pytest.skip("no nvcc here")
    source = tmp_path / "snippet.cu"
    source.write_text(code)
    result = subprocess.run(
        [
            compiler,
            "-std=c++17",
            "-I",
            os.path.join(ROOT, "include"),
            "-c",
            str(source),
            "-o",
            str(tmp_path / "snippet.o"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_every_snippet_is_covered():
    languages = set()
    for path in DOCS:
        languages |= set(re.findall(r"```(\w+)\n", open(path, encoding="utf-8").read()))
    assert languages <= {"python", "cpp", "bash"}, languages
    assert snippets("python") and snippets("cpp")

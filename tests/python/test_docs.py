"""Every Python and C++ snippet in the README and docs/ runs (Python) or compiles (C++, with nvcc
where there is one); an excerpt (a block whose first line is `// From PATH` or `# From PATH`) is
found, line for line, in the file it names. Shell blocks name commands that other tests run."""

import glob
import json
import os
import re
import shutil
import subprocess

import pytest
from subprocesses import ROOT, run_python

DOCS = [os.path.join(ROOT, "README.md"), *sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))]


EXCERPT = re.compile(r"^(?://|#) From (\S+)\n")


def blocks(language):
    """(doc, index, text) of every block of `language`."""
    for path in DOCS:
        text = open(path, encoding="utf-8").read()
        for i, block in enumerate(re.findall(rf"```{language}\n(.*?)```", text, re.S)):
            yield os.path.basename(path), i, block


def snippets(language):
    """Blocks to run or compile: everything but excerpts."""
    return [
        pytest.param(block, id=f"{doc}-{i}")
        for doc, i, block in blocks(language)
        if not EXCERPT.match(block)
    ]


def excerpts():
    return [
        pytest.param(block, id=f"{doc}-{language}-{i}")
        for language in ("cpp", "python", "cmake")
        for doc, i, block in blocks(language)
        if EXCERPT.match(block)
    ]


def nvcc():
    return shutil.which("nvcc") or next(
        (p for p in ["/usr/local/cuda/bin/nvcc"] if os.path.exists(p)), None
    )


def framework(code):
    """The framework a Python snippet is about: the first it imports."""
    imports = re.findall(r"^(?:import|from) (keras|torch|jax|tensorflow)\b", code, re.M)
    return imports[0] if imports else "tensorflow"


def python_snippets_by_framework():
    """Python snippets grouped by framework: a group runs in one fresh process (starting a
    framework takes seconds), each snippet in a namespace of its own, in document order."""
    groups = {}
    for doc, i, block in blocks("python"):
        if not EXCERPT.match(block):
            groups.setdefault(framework(block), []).append((f"{doc}-{i}", block))
    return [pytest.param(group, id=name) for name, group in groups.items()]


RUN_SNIPPETS = """
import json, sys
for name, code in json.load(open(sys.argv[1])):
    print("running", name, flush=True)
    exec(compile(code, name, "exec"), {"__name__": "__main__"})
"""


@pytest.mark.slow
@pytest.mark.parametrize("group", python_snippets_by_framework())
def test_python_snippets_run(group, tmp_path):
    if any(framework(code) == "keras" for _, code in group):
        pytest.importorskip("keras")
    (tmp_path / "snippets.json").write_text(json.dumps(group))
    run_python("-c", RUN_SNIPPETS, str(tmp_path / "snippets.json"))


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


@pytest.mark.parametrize("block", excerpts())
def test_excerpt_is_in_its_source_file(block):
    source_path = EXCERPT.match(block).group(1)
    excerpt = block[EXCERPT.match(block).end() :].rstrip("\n")
    source = open(os.path.join(ROOT, source_path), encoding="utf-8").read()
    assert excerpt in source, f"the excerpt is no longer in {source_path}:\n{excerpt}"


def test_every_snippet_is_covered():
    languages = set()
    for path in DOCS:
        languages |= set(re.findall(r"```(\w+)\n", open(path, encoding="utf-8").read()))
    assert languages <= {"python", "cpp", "bash", "cmake"}, languages
    assert python_snippets_by_framework() and snippets("cpp") and excerpts()
    assert all(EXCERPT.match(block) for _, _, block in blocks("cmake"))

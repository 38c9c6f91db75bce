# SPDX-License-Identifier: Apache-2.0
"""Assembles constmem's distributions from a CMake install tree (scripts/build-wheels.sh runs it).

- `constmem`: the framework-free package, the Python of every binding, the op descriptions, the
  core's headers and the CMake package with its tf_adapter, torch and jax components. Pure Python
  (py3-none-any); its extras install the op libraries: `constmem[torch]`, `constmem[jax-cu12]`...
- `constmem-<framework>-cu<N>`: one framework's op library built with CUDA N, as the import
  package `constmem_<framework>_cu<N>`. It links no Python, so one wheel (py3-none-<platform>)
  serves every CPython; auditwheel then gives it its manylinux tag.

The metadata comes from pyproject.toml: the version, the description, and each framework's pin
(its extra there), so the source build and the distributions never disagree.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import sys
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARIES = {"tensorflow": "_constmem_ops", "torch": "_constmem_torch", "jax": "_constmem_jax"}
DISPLAY = {"tensorflow": "TensorFlow", "torch": "PyTorch", "jax": "JAX"}
# The CMake install tree's folders that the core distribution carries under constmem/.
CORE_TREE = ("include", "lib", "share", "ops")


def project() -> dict:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_wheel(
    out: str,
    name: str,
    tag: str,
    files: dict[str, bytes],
    metadata: str,
    pure: bool,
    extra_info: dict[str, str] | None = None,
) -> str:
    """Writes `files` (archive name -> bytes) and the dist-info; returns the wheel's path."""
    version = project()["version"]
    stem = f"{name.replace('-', '_')}-{version}"
    info = f"{stem}.dist-info"
    files = dict(files)
    files[f"{info}/METADATA"] = metadata.encode()
    files[f"{info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: constmem scripts/make_wheels.py\n"
        f"Root-Is-Purelib: {'true' if pure else 'false'}\nTag: {tag}\n"
    ).encode()
    with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
        files[f"{info}/licenses/LICENSE"] = f.read()
    for extra_name, text in (extra_info or {}).items():
        files[f"{info}/{extra_name}"] = text.encode()
    record = [record_line(n, d) for n, d in sorted(files.items())] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = os.path.join(out, f"{stem}-{tag}.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for archive_name in sorted(files):
            entry = zipfile.ZipInfo(archive_name, date_time=(2026, 1, 1, 0, 0, 0))
            executable = archive_name.endswith(".so")
            entry.external_attr = (0o755 if executable else 0o644) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, files[archive_name])
    return path


def tree(folder: str, prefix: str, skip=("__pycache__", "_dev", "_ops")) -> dict[str, bytes]:
    """The files under `folder` as archive names under `prefix`."""
    files = {}
    for directory, subdirs, names in os.walk(folder):
        subdirs[:] = sorted(d for d in subdirs if d not in skip)
        for file_name in sorted(names):
            if file_name.endswith(".pyc"):
                continue
            path = os.path.join(directory, file_name)
            relative = os.path.relpath(path, folder).replace(os.sep, "/")
            with open(path, "rb") as f:
                files[f"{prefix}/{relative}"] = f.read()
    return files


def framework_pin(framework: str, library_info: dict) -> str:
    """The framework requirement of a binding: the exact release the library was built against
    where its ABI pins one (TensorFlow), else pyproject.toml's extra (a stable ABI)."""
    if framework == "tensorflow" and library_info.get("tensorflow"):
        return f"tensorflow=={library_info['tensorflow']}"
    return project()["optional-dependencies"][framework][0]


def metadata(
    name: str, summary: str, requires: list[str], extras: dict[str, list[str]], description: str
) -> str:
    p = project()
    lines = [
        "Metadata-Version: 2.4",
        f"Name: {name}",
        f"Version: {p['version']}",
        f"Summary: {summary}",
        f"License-Expression: {p['license']}",
        "License-File: LICENSE",
        f"Requires-Python: {p['requires-python']}",
        f"Keywords: {','.join(p['keywords'])}",
        *(f"Author: {a['name']}" for a in p["authors"]),
        *(f"Classifier: {c}" for c in p["classifiers"]),
        *(f"Project-URL: {k}, {v}" for k, v in p["urls"].items()),
        *(f"Requires-Dist: {r}" for r in requires),
    ]
    for extra, items in extras.items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in items]
    lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + description


def core_wheel(stage: str, out: str, variants: list[str]) -> str:
    p = project()
    files = tree(os.path.join(ROOT, "python", "constmem"), "constmem")
    for folder in CORE_TREE:
        if os.path.isdir(os.path.join(stage, folder)):
            files.update(tree(os.path.join(stage, folder), f"constmem/{folder}"))
    # Each extra installs one framework's op library: the newest CUDA by default.
    extras = {}
    for framework in LIBRARIES:
        for variant in variants:
            distribution = f"constmem-{framework}-{variant}=={p['version']}"
            extras.setdefault(f"{framework}-{variant}", []).append(distribution)
            if variant == variants[0]:
                extras[framework] = [distribution]
    scripts = "".join(f"{k} = {v}\n" for k, v in p.get("scripts", {}).items())
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    text = metadata(p["name"], p["description"], p["dependencies"], extras, readme)
    return write_wheel(
        out,
        p["name"],
        "py3-none-any",
        files,
        text,
        pure=True,
        extra_info={"entry_points.txt": f"[console_scripts]\n{scripts}"},
    )


def binding_wheel(stage: str, out: str, framework: str, variant: str, platform: str) -> str:
    p = project()
    name = LIBRARIES[framework]
    with open(os.path.join(stage, "_ops", name + ".json"), encoding="utf-8") as f:
        info = json.load(f)
    if info.get("test_hooks"):
        sys.exit(f"make_wheels: {name} is a test build (fault injection): build a release")
    cuda = info.get("cuda", "")
    if not info.get("gpu_kernels") or cuda.split(".")[0] != variant[2:]:
        sys.exit(f"make_wheels: {name} has CUDA '{cuda}' kernels, not {variant}'s")
    package = f"constmem_{framework}_{variant}"
    distribution = package.replace("_", "-")
    summary = (
        f"constmem's {DISPLAY[framework]} op library, CUDA {cuda} kernels "
        f"({info.get('cuda_architectures', '')})"
    )
    docstring = f'"""{summary}; `import constmem.{framework}` loads it."""\n'
    files = {f"{package}/__init__.py": docstring.encode()}
    for suffix in (".so", ".json"):
        with open(os.path.join(stage, "_ops", name + suffix), "rb") as f:
            files[f"{package}/{name}{suffix}"] = f.read()
    requires = [f"constmem=={p['version']}", framework_pin(framework, info)]
    description = (
        f"# {distribution}\n\n{summary}. Installed by `pip install "
        f"constmem[{framework}-{variant}]`; see the `constmem` distribution.\n"
    )
    text = metadata(distribution, summary, requires, {}, description)
    return write_wheel(out, distribution, f"py3-none-{platform}", files, text, pure=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", required=True, help="cmake --install ... --prefix STAGE")
    parser.add_argument("--out", required=True)
    parser.add_argument("--variant", required=True, help="cu13 or cu12: the CUDA of the libraries")
    parser.add_argument(
        "--variants",
        default="cu13,cu12",
        help="the core's extras, the default (first) one's for `constmem[torch]`",
    )
    parser.add_argument("--platform", default="linux_x86_64")
    parser.add_argument("--no-core", action="store_true", help="the op libraries' wheels alone")
    args = parser.parse_args()
    if not re.fullmatch(r"cu\d+", args.variant):
        sys.exit(f"make_wheels: --variant must be cu<N>; got {args.variant}")
    os.makedirs(args.out, exist_ok=True)
    made = [] if args.no_core else [core_wheel(args.stage, args.out, args.variants.split(","))]
    for framework, name in LIBRARIES.items():
        if os.path.exists(os.path.join(args.stage, "_ops", name + ".so")):
            made.append(binding_wheel(args.stage, args.out, framework, args.variant, args.platform))
    for path in made:
        print(path)


if __name__ == "__main__":
    main()

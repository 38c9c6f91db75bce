# SPDX-License-Identifier: Apache-2.0
"""The examples' op libraries in every framework, loaded with constmem on their first use.

`loaders(name, descriptions)` gives `(tensorflow, torch, jax)`: each a function that loads
`_<name>_<tf|torch|jax>.so` from BUILD with that framework's `constmem.<framework>.load_library` on
its first call, and returns the module of ops after (a dictionary lookup, which
`torch.compile(fullgraph=True)` traces through).
"""

import importlib
import os
import subprocess
import sys

BUILD = os.environ.get("APPLY_GAIN_BUILD", os.path.join(os.path.dirname(__file__), "build"))


def loaders(name, descriptions):
    """The loaders of library `name`, whose Python descriptions are `descriptions`."""
    loaded = {}

    def loader(framework, suffix):
        def load():
            if framework not in loaded:
                package = importlib.import_module(f"constmem.{framework}")
                path = f"{BUILD}/_{name}_{suffix}.so"
                loaded[framework] = package.load_library(path, descriptions)
            return loaded[framework]

        return load

    return loader("tensorflow", "tf"), loader("torch", "torch"), loader("jax", "jax")


def run_on_cpu_devices(script, count=4):
    """`script` run by Python in a fresh process on `count` simulated CPU devices (JAX's host
    platform device count), from this folder: the subprocess's result."""
    env = dict(
        os.environ,
        XLA_FLAGS=f"--xla_force_host_platform_device_count={count}",
        JAX_PLATFORMS="cpu",
        PYTHONPATH=os.pathsep.join(sys.path),
    )
    here = os.path.dirname(os.path.abspath(__file__))
    return subprocess.run(
        [sys.executable, "-c", script], cwd=here, env=env, capture_output=True, text=True
    )

# SPDX-License-Identifier: Apache-2.0
"""Running Python in a fresh process, as deployments and separate tools do."""

import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def python_env(**extra):
    """This process's environment and import path: a child imports the same package."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=os.pathsep.join(sys.path))
    env.update(extra)
    return env


def run_python(*args, env=None, check=True, timeout=600):
    """Runs `python ARGS...` from the repository root; asserts success unless `check` is False."""
    result = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env or python_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check:
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result

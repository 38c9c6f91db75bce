# SPDX-License-Identifier: Apache-2.0
"""What the functions built on the ops share (an op description's FUNCTIONS), in any framework.

They take tensors of whichever framework the caller uses: the framework is found from the value
(sys.modules, so that nothing is imported), and casts are its own, so that gradients flow
through them. Imports no framework.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import sys

import numpy as np

# Data the functions take beyond an op's dtypes: computed in float32, returned in their own.
WIDENED_DTYPES = ("float16", "bfloat16")


class Required:
    """The default of an argument that may come under another name (torchvision's, torchaudio's).

    Tested with isinstance, which torch.compile traces whatever the value (`is` it does not, for
    a symbolic int).
    """

    def __repr__(self):
        return "<required>"


REQUIRED = Required()


def signature(function, annotations: dict | None = None) -> inspect.Signature:
    """`function`'s signature as its users read it, without REQUIRED defaults.

    A positional argument whose default is REQUIRED is shown as required (no default), and the
    annotations given (a peer's, by name) are added. The function still takes the argument under
    its other names.
    """
    parameters = []
    for parameter in inspect.signature(function).parameters.values():
        if (
            isinstance(parameter.default, Required)
            and parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        ):
            parameter = parameter.replace(default=inspect.Parameter.empty)
        if annotations and parameter.name in annotations:
            parameter = parameter.replace(annotation=annotations[parameter.name])
        parameters.append(parameter)
    return inspect.Signature(parameters)


def argument(function: str, given: list) -> tuple:
    """(the name it came under, its value) of a required argument that has several names.

    `given` holds (name, value) for each name, the value REQUIRED where it was not given. Raises
    TypeError, as Python does, where none or two of the names are given.
    """
    passed = [(name, value) for name, value in given if not isinstance(value, Required)]
    if not passed:
        raise TypeError(f"{function}() missing required argument: {given[0][0]!r}")
    if len(passed) > 1:
        raise TypeError(
            f"{function}() got {passed[0][0]!r} and {passed[1][0]!r}, two names of one argument"
        )
    return passed[0]


def framework(value) -> str | None:
    """'torch', 'jax' or 'tensorflow' for a tensor of that framework, else None."""
    torch = sys.modules.get("torch")  # first: the common case, before the checks of ABCs
    if torch is not None and isinstance(value, torch.Tensor):
        return "torch"
    if value is None or isinstance(value, (numbers.Number, list, tuple, np.ndarray)):
        return None
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(value, jax.Array):
        return "jax"
    tf = sys.modules.get("tensorflow")
    if tf is not None and tf.is_tensor(value):
        return "tensorflow"
    return None


def torch_compiling() -> bool:
    """Whether torch.compile is tracing the call (where torch is loaded)."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()


def shape_cache(maxsize: int):
    """functools.lru_cache for a pure function of a call's shapes and settings.

    Bypassed while torch.compile traces the call: Dynamo traces through a cache it meets and warns
    of each one, so the traced call runs the function itself (its result is a constant either way).
    """

    def wrap(function):
        cached = functools.lru_cache(maxsize=maxsize)(function)

        @functools.wraps(function)
        def call(*args):
            return function(*args) if torch_compiling() else cached(*args)

        call.cache_clear = cached.cache_clear
        call.cache_info = cached.cache_info
        return call

    return wrap


def dtype_name(data) -> str | None:
    """The dtype's name ("float32", "bfloat16"), or None for data without a dtype (a list)."""
    dtype = getattr(data, "dtype", None)
    if dtype is None:
        return None
    return getattr(dtype, "name", None) or str(dtype).removeprefix("torch.")


def cast(t, dtype: str):
    """The tensor `t` in the dtype named, in its own framework (NumPy for anything else)."""
    name = framework(t)
    if name == "torch":
        return t.to(getattr(sys.modules["torch"], dtype))
    if name == "jax":
        return t.astype(getattr(sys.modules["jax"].numpy, dtype))
    if name == "tensorflow":
        tf = sys.modules["tensorflow"]
        return tf.cast(t, getattr(tf, dtype))
    return np.asarray(t, dtype)


def widened(data, name: str, accepted: tuple, native: tuple = ()):
    """(data, restore): float16 and bfloat16 data in float32, and what casts a result back.

    Data of the op's own dtypes (`native`) stay as they are. Refuses a dtype outside `accepted`
    by the name the user gave the data.
    """
    dtype = dtype_name(data)
    if dtype is not None and dtype not in accepted:
        listed = f"{', '.join(accepted[:-1])} or {accepted[-1]}"
        raise ValueError(f"{name} must be {listed}; got {dtype}")
    if dtype not in WIDENED_DTYPES or dtype in native:
        return data, lambda result: result
    return cast(data, "float32"), lambda result: cast(result, dtype)


class OperatorBits:
    """F's bit functions (constmem.ops.ARRAY_API) through Python's operators.

    For the frameworks whose tensors take them (PyTorch, JAX); TensorFlow's F writes its own.
    """

    @staticmethod
    def shift_left(t, n):
        return t << n

    @staticmethod
    def shift_right(t, n):
        return t >> n

    @staticmethod
    def low_bits(t, n):
        return t & ((1 << n) - 1)

# SPDX-License-Identifier: Apache-2.0
"""Each entry point against a direct caller, past the Python packages' checks: the XLA FFI handlers
called with result buffers of another dtype or shape, the op registry's C functions with null
pointers, negative counts and overflowing shapes, PyTorch's kernels with results larger than
memory and float64 values past float32's range, TensorFlow's shape functions with overflowing
shapes. Each is a clean error of the framework's kind that names the argument, and the next call
is right. tests/fuzz/ drives the same entry points with random calls (scripts/sanitize.sh)."""

import ctypes
import math

import numpy as np
import pytest
from constmem import _libraries


def _check_call_function(framework: str):
    try:
        library = ctypes.CDLL(_libraries.library_path(framework))
    except (OSError, RuntimeError) as e:
        pytest.skip(f"no {framework} op library: {e}")
    function = library.constmem_op_registry_check_call
    function.restype = ctypes.c_int
    return function


def _check_call(name, dtype, dims, table_sizes, floats=(0.0, 0.0), ints=(1, 1), rank=None):
    """constmem_op_registry_check_call as a direct caller makes it: (result, y dims, message)."""
    function = _check_call_function("torch")
    longs = ctypes.c_longlong * 8
    y_dims = longs()
    y_rank = ctypes.c_int(8)
    error = ctypes.create_string_buffer(256)
    result = function(
        None if name is None else name.encode(),
        None if dtype is None else dtype.encode(),
        None if dims is None else longs(*dims),
        len(dims or ()) if rank is None else rank,
        longs(*table_sizes),
        len(table_sizes),
        (ctypes.c_char_p * 2)(b"SAME", b"SAME"),
        (ctypes.c_double * 2)(*floats),
        longs(*ints),
        y_dims,
        ctypes.byref(y_rank),
        error,
        len(error),
    )
    return result, list(y_dims[: y_rank.value]), error.value.decode()


def test_check_call_refuses_an_overflowing_shape_with_its_dims():
    assert _check_call("polyval", "float32", [4, 5], [3])[:2] == (0, [4, 5])
    result, _, message = _check_call("polyval", "float32", [2**62, 4], [3])
    assert result == 1
    assert message.startswith("x of shape [4611686018427387904, 4] is larger than the kernels")
    # Upfirdn's result: 2^40 samples at up = 2^31 - 1.
    result, _, message = _check_call("upfirdn", "float32", [2**40], [1], ints=(2**31 - 1, 1))
    assert result == 1 and "upfirdn" in message.lower(), message
    # Zero elements, but other dimensions whose product overflows what the kernels index with.
    assert _check_call("polyval", "float32", [2**40, 2**40, 0], [3])[0] == 1
    assert _check_call("polyval", "float32", [2**40, 0], [3])[:2] == (0, [2**40, 0])


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"name": None}, "name must not be null"),
        ({"dtype": None}, "dtype must not be null"),
        ({"dims": None, "rank": 2}, "dims must not be null"),
        ({"rank": -1}, "rank must be 0 or more"),
    ],
)
def test_check_call_refuses_bad_c_arguments(arguments, message):
    call = {"name": "polyval", "dtype": "float32", "dims": [4], "table_sizes": [3]} | arguments
    result, _, error = _check_call(**call)
    assert result == 1
    assert error.startswith(message), error
    assert _check_call("polyval", "float32", [4], [3])[:2] == (0, [4])


def test_table_placement_refuses_a_count_outside_the_table_and_null_names():
    try:
        library = ctypes.CDLL(_libraries.library_path("torch"))
    except (OSError, RuntimeError) as e:
        pytest.skip(f"no torch op library: {e}")
    function = library.constmem_op_registry_table_placement
    function.restype = ctypes.c_char_p
    function.argtypes = (
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_longlong,
        ctypes.c_int,
        ctypes.c_longlong,
    )
    assert function(b"polyval", 0, b"float32", 3, 0, -1) is not None
    assert function(b"polyval", 0, b"float32", 2**62, 0, -1) is None
    assert function(b"polyval", 0, b"float32", -5, 0, -1) is None
    assert function(None, 0, b"float32", 3, 0, -1) is None
    assert function(b"polyval", 0, None, 3, 0, -1) is None
    assert function(b"polyval", 0, b"float32", 3, 7, -1) is None


def test_the_ffi_handlers_check_the_result_buffer():
    jax = pytest.importorskip("jax")
    import constmem.jax as cm
    import jax.numpy as jnp

    x = jnp.ones(8, jnp.float32)
    coeffs = jnp.asarray([2.0, 1.0], jnp.float32)
    for result, message in [
        (jax.ShapeDtypeStruct((8,), jnp.int8), "polyval's result must be float32 .*; got"),
        (jax.ShapeDtypeStruct((4,), jnp.float32), r"polyval's result must have shape \[8\]"),
        (jax.ShapeDtypeStruct((8, 1), jnp.float32), r"got \[8, 1\]"),
        # As many results as the op has outputs: none more, none fewer.
        ((jax.ShapeDtypeStruct((8,), jnp.float32),) * 2, r"gives 1 result \(y\); got 2"),
    ]:
        with pytest.raises(Exception, match=message):
            np.asarray(jax.ffi.ffi_call("constmem_polyval", result)(x, coeffs))
        static = jax.ffi.ffi_call("constmem_polyval_static", result)
        with pytest.raises(Exception, match=message):
            np.asarray(static(x, table=np.asarray([2.0, 1.0])))
    np.testing.assert_array_equal(np.asarray(cm.polyval([2.0, 1.0], x)), 3.0)


def test_the_ffi_handlers_take_a_table_as_a_vector():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    x = jnp.ones(8, jnp.float32)
    call = jax.ffi.ffi_call("constmem_polyval", jax.ShapeDtypeStruct(x.shape, x.dtype))
    with pytest.raises(Exception, match=r"coeffs must be a vector \(rank 1\); got shape \[2, 1\]"):
        np.asarray(call(x, jnp.ones((2, 1), jnp.float32)))


def test_a_static_table_past_float32_range_rounds_to_infinity_in_the_ffi_handlers():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    x = jnp.ones(4, jnp.float32)
    call = jax.ffi.ffi_call("constmem_polyval_static", jax.ShapeDtypeStruct(x.shape, x.dtype))
    y = np.asarray(call(x, table=np.asarray([1e300])))
    assert np.all(np.isposinf(y))


def test_torch_refuses_a_result_larger_than_memory_with_its_size():
    torch = pytest.importorskip("torch")
    import constmem.torch as ct

    x = torch.ones(4, 16)
    with pytest.raises(ValueError, match=r"upfirdn's result of shape \[4, 32212254706\] would"):
        torch.ops.constmem.upfirdn_static(x, [1.0], 2**31 - 1, 1)
    with pytest.raises(ValueError, match="more than this machine's memory"):
        ct.upfirdn(x, [1.0], up=2**31 - 1)
    # An expanded x (stride 0) standing for more elements than memory holds.
    with pytest.raises(ValueError, match=r"x's contiguous copy of shape \[1099511627776, 1024\]"):
        torch.ops.constmem.polyval(torch.zeros(1).expand(2**40, 1024), torch.ones(3))
    y = ct.upfirdn(torch.ones(2, 3), [1.0], up=2)
    assert y.shape == (2, 5)


def test_jax_refuses_a_result_larger_than_its_devices_memory_with_its_size():
    jax = pytest.importorskip("jax")
    import constmem.jax as cj

    x = jax.numpy.ones((4, 16), "float32")
    for taps in ([1.0], jax.numpy.ones(1, "float32")):
        with pytest.raises(ValueError, match=r"upfirdn's result of shape \[4, 32212254706\] would"):
            cj.upfirdn(x, taps, up=2**31 - 1)
    with pytest.raises(ValueError, match=r"would need 515\.4 GB"):
        jax.jit(lambda v: cj.upfirdn(v, [1.0], up=2**31 - 1))(x)
    assert cj.upfirdn(jax.numpy.ones((2, 3)), [1.0], up=2).shape == (2, 5)


def test_torch_rounds_a_static_table_past_float32_range_to_infinity():
    torch = pytest.importorskip("torch")
    y = torch.ops.constmem.polyval_static(torch.ones(3), [1e300])
    assert torch.all(torch.isposinf(y))
    with pytest.raises(ValueError, match="the range"):
        torch.ops.constmem.interpolate_static(torch.ones(3), [1.0, 2.0], -1e300, 1.0)


def test_tensorflow_shape_functions_refuse_an_overflowing_shape():
    tf = pytest.importorskip("tensorflow")
    from constmem.tensorflow import _loader

    ops = _loader.ops()

    @tf.function
    def call(x):
        return ops.constmem_polyval_attr(x=x, coeffs=[0x3F800000])

    with pytest.raises(ValueError, match=r"x of shape \[\?, 1099511627776, 1099511627776\]"):
        call.get_concrete_function(tf.TensorSpec([None, 2**40, 2**40], tf.float32))
    spec = tf.TensorSpec([None, 2**40, 0], tf.float32)
    assert call.get_concrete_function(spec).structured_outputs.shape.as_list() == [None, 2**40, 0]
    assert math.isclose(float(call(tf.constant([2.0]))[0]), 1.0)


@pytest.mark.parametrize("static", [False, True])
def test_torch_kernels_free_the_arguments_of_a_call_they_refuse(static):
    # The kernel owns its inputs: a table left on the stack when a check throws is never freed.
    torch = pytest.importorskip("torch")
    import gc
    import weakref

    import constmem.torch  # noqa: F401

    table = torch.ones(3)
    ref = weakref.ref(table)
    with pytest.raises(
        ValueError, match="x must be float32, float64, float16 or bfloat16; got int32"
    ):
        torch.ops.constmem.polyval(torch.ones(2, dtype=torch.int32), table)
    del table
    gc.collect()
    assert ref() is None
    rows = torch.ones(3)
    ref = weakref.ref(rows)
    with pytest.raises(ValueError, match="layout must be one of"):
        if static:
            torch.ops.constmem.separable_filter_static(
                torch.ones(4, 4), [1.0], [1.0], "shared", "reflect", "bad"
            )
        else:
            torch.ops.constmem.separable_filter(
                torch.ones(4, 4), rows, torch.ones(1), "shared", "reflect", "bad"
            )
    del rows
    gc.collect()
    assert ref() is None


def test_an_op_spec_lists_several_outputs_and_one_without_them_has_one():
    """The registry's outputs, each with its dtype rule; a library that lists none (built before
    they were listed) has one, `y`, of the op's output rule."""
    from constmem._registry import OpSpec, Output

    base = dict(
        library="my", type="Two", name="two", data="x", table="t", min_table=1, max_table=4,
        int32_table=False, float64=False, elementwise=False, doc="", attrs=(),
    )  # fmt: skip
    one = OpSpec(**base, output_rule="fixed", output_dtypes=("uint8",))
    assert one.outputs == (Output("y", "fixed", ("uint8",)),) and not one.several_outputs
    assert one.output_label(0) == "two's result" and not one.float_output
    two = OpSpec(**base, outputs=(Output("codes", "fixed", ("uint8",)), Output("absmax")))
    assert two.several_outputs and two.output_names == ("codes", "absmax")
    assert two.output_dtypes_of("bfloat16", {}) == ("uint8", "bfloat16")
    assert two.float_outputs("float32", {}) == (False, True) and two.float_output
    assert two.output_label(1) == "two's absmax"

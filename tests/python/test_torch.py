# SPDX-License-Identifier: Apache-2.0
"""The PyTorch ops: results against independent references, every table form, CPU and CUDA,
errors, gradients, torch.library.opcheck and torch.compile."""

import constmem.torch as cm
import numpy as np
import pytest
import torch
from reference import (
    fir_float64,
    fir_fma_reference,
    frobulate_reference,
    interpolate_float64,
    interpolate_fma_reference,
    polyval_coefficient_gradient,
    polyval_fma_reference,
    random_case,
)

DEVICES = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
DTYPES = [np.float32, np.float64]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


def table_forms(values, device, dtype=None):
    """Every form a table can take next to data on `device`: static, CPU tensor, device tensor."""
    array = np.asarray(values, dtype=dtype)
    forms = {"static": array.tolist(), "cpu": torch.from_numpy(array.copy())}
    if device != "cpu":
        forms["device"] = forms["cpu"].to(device)
        forms["pinned"] = forms["cpu"].pin_memory()
    return forms


def as_numpy(tensor):
    return tensor.detach().cpu().numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("table_size", [1, 100, 1025, 16384, 16385, 70000])
def test_frobulate_matches_left_to_right_sums(device, dtype, table_size):
    rng = np.random.default_rng(table_size)
    data, table = random_case(rng, (3, 257), dtype, table_size)
    expected = frobulate_reference(data, table)
    for form, t in table_forms(table, device).items():
        out = cm.frobulate(torch.from_numpy(data).to(device), t)
        np.testing.assert_array_equal(as_numpy(out), expected, err_msg=form)


# Polyval's float32 coefficients: by value up to 4 KiB (1,024), its constant bank up to 4,096,
# global memory beyond (a host table through a stream-ordered buffer).
# Whether the op library has GPU kernels (placement_of answers None without them).
GPU_KERNELS = cm.placement_of("polyval", 1) is not None
# (entries, form, placement, stream buffers, elements): a call of at most 65,536 elements reads a
# device table in place rather than copy it into the bank.
PLACEMENTS = [
    (1024, "cpu", "by_value", 0, 4099),
    (1025, "cpu", "constant_bank", 0, 4099),
    (4096, "static", "constant_bank", 0, 4099),
    (4097, "cpu", "global_memory", 1, 4099),
    (70000, "static", "global_memory", 1, 4099),
    (4096, "device", "global_memory", 0, 65536),
    (4096, "device", "constant_bank", 0, 65537),
    (4097, "device", "global_memory", 0, 65537),
]


@pytest.mark.parametrize(("size", "form", "placement", "buffers", "elements"), PLACEMENTS)
def test_table_placements_say_where_each_table_went(
    device, size, form, placement, buffers, elements
):
    x = torch.linspace(-1, 1, elements, device=device)
    coeffs = np.random.default_rng(size).uniform(-1, 1, size).astype(np.float32) / size
    table = table_forms(coeffs, device)
    if form not in table:
        pytest.skip("a device table needs a GPU")
    with cm.table_placements() as seen:
        y = cm.polyval(table[form], x)
    expected = np.polyval(coeffs.astype(np.float64), as_numpy(x).astype(np.float64))
    np.testing.assert_allclose(as_numpy(y), expected, rtol=1e-5, atol=1e-6)
    # The CPU kernel performs the same FMAs in the same order.
    on_cpu = cm.polyval(torch.from_numpy(coeffs), x.cpu())
    np.testing.assert_array_equal(as_numpy(y), as_numpy(on_cpu))
    if device == "cpu":
        assert seen.counts == {} and seen.placement is None  # CPU kernels place nothing
    else:
        assert seen.counts == {placement: 1}, seen
        assert seen.placement == placement
        assert seen.stream_buffers == buffers
    # Asked without a launch, on any machine: the same rule's answer (none without GPU kernels).
    source = "device" if form == "device" else "host"
    expected_rule = placement if GPU_KERNELS else None
    assert cm.placement_of("polyval", size, "float32", source, elements=elements) == expected_rule


def test_placement_of_refuses_bad_questions():
    with pytest.raises(ValueError, match="op must be one of"):
        cm.placement_of("nope", 3)
    with pytest.raises(
        ValueError, match="x must be float32, float64, float16 or bfloat16; got uint8"
    ):
        cm.placement_of("polyval", 3, "uint8")
    with pytest.raises(ValueError, match="source must be 'device' or 'host'"):
        cm.placement_of("polyval", 3, "float32", "gpu")
    for elements in (-1, 2.0, True, 2**63, 2**64):
        with pytest.raises(ValueError, match=r"elements must be an int from 0 to 2\*\*63 - 1"):
            cm.placement_of("polyval", 3, elements=elements)
    # The op's own limits on the table's size, as a call states them.
    for entries in (0, (1 << 20) + 1):
        with pytest.raises(ValueError, match=rf"must have 1 to 1048576 entries; got {entries}$"):
            cm.placement_of("polyval", entries)
    with pytest.raises(ValueError, match=r"entries must be an int; got 3\.0"):
        cm.placement_of("polyval", 3.0)


@pytest.mark.parametrize(
    ("op", "entries", "source", "elements", "placement"),
    [
        ("fir_filter", 17, "device", None, "constant_bank"),
        ("fir_filter", 17, "device", 1024, "global_memory"),
        ("fir_filter", 17, "device", 65536, "global_memory"),
        ("fir_filter", 17, "device", 65537, "global_memory"),
        ("fir_filter", 17, "device", 1 << 25, "global_memory"),
        ("fir_filter", 17, "device", (1 << 25) + 1, "constant_bank"),
        ("fir_filter", 17, "host", 1024, "by_value"),
        ("fir_filter", 2000, "host", 1024, "constant_bank"),
        ("separable_filter", 3, "device", 1024, "global_memory"),
        # Two copies into the bank cost more than such a kernel: in place up to 2^23 outputs.
        ("separable_filter", 3, "device", 65537, "global_memory"),
        ("separable_filter", 3, "device", 1 << 23, "global_memory"),
        ("separable_filter", 3, "device", (1 << 23) + 1, "constant_bank"),
        ("frobulate", 2000, "device", 65536, "global_memory"),
        ("frobulate", 2000, "device", 65537, "constant_bank"),
        ("upfirdn", 100, "device", 1024, "global_memory"),
        ("upfirdn", 100, "device", None, "constant_bank"),
        # Lookups: a small host table by value in a small call, else by value and staged in
        # shared memory by each block; never copied to the device.
        ("interpolate", 16, "device", 1024, "global_memory"),
        ("interpolate", 16, "host", 1024, "by_value"),
        ("interpolate", 16, "host", 65537, "shared_memory"),
        ("interpolate", 1024, "host", 1024, "by_value"),
        ("interpolate", 1024, "host", None, "shared_memory"),
        ("interpolate", 1025, "host", 1024, "shared_memory"),
    ],
)
def test_placement_of_a_small_call_copies_no_table_it_can_avoid(
    op, entries, source, elements, placement
):
    expected = placement if GPU_KERNELS else None
    assert cm.placement_of(op, entries, "float32", source, elements=elements) == expected


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("degree", [0, 5, 300])
def test_polyval_matches_horner_with_one_rounding(device, dtype, degree):
    rng = np.random.default_rng(degree)
    x = rng.uniform(-1.1, 1.1, size=(2, 33)).astype(dtype)
    coeffs = rng.standard_normal(degree + 1).astype(dtype)
    expected = polyval_fma_reference(coeffs, x)
    for form, c in table_forms(coeffs, device).items():
        out = cm.polyval(c, torch.from_numpy(x).to(device))
        np.testing.assert_array_equal(as_numpy(out), expected, err_msg=form)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("taps", "padding"), [(1, "SAME"), (6, "SAME"), (17, "VALID"), (40, "VALID")]
)
def test_fir_filter_matches_fma_definition(device, dtype, taps, padding):
    rng = np.random.default_rng(taps)
    x = rng.standard_normal((2, 3, 37)).astype(dtype)
    t = rng.standard_normal(taps).astype(dtype)
    expected = fir_fma_reference(x, t, padding)
    np.testing.assert_allclose(expected, fir_float64(x, t, padding), rtol=1e-4, atol=1e-4)
    for form, tt in table_forms(t, device).items():
        out = cm.fir_filter(torch.from_numpy(x).to(device), tt, padding=padding)
        assert out.shape == expected.shape
        np.testing.assert_array_equal(as_numpy(out), expected, err_msg=form)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("knots", [2, 300, 8192, 16384, 100000])
def test_interpolate_matches_its_definition_and_np_interp(device, dtype, knots):
    rng = np.random.default_rng(knots)
    x = rng.uniform(-1.3, 2.3, size=(3, 41)).astype(dtype)
    x[0, :4] = [np.nan, np.inf, -np.inf, -1.0]
    k = rng.standard_normal(knots).astype(dtype)
    expected = interpolate_fma_reference(x, k, -1.0, 2.0)
    np.testing.assert_allclose(
        expected, interpolate_float64(x, k, -1.0, 2.0), atol=40 * np.finfo(dtype).eps * knots
    )
    for form, kk in table_forms(k, device).items():
        out = cm.interpolate(torch.from_numpy(x).to(device), kk, -1.0, 2.0)
        np.testing.assert_array_equal(as_numpy(out), expected, err_msg=form)


def test_empty_and_scalar_inputs(device):
    empty = torch.zeros((0, 4), device=device)
    assert cm.frobulate(empty, [1, 2]).shape == (0, 4)
    assert cm.polyval([1.0, 2.0], torch.tensor(3.0, device=device)).item() == 5.0
    assert cm.fir_filter(torch.zeros((2, 3), device=device), [1.0] * 5, padding="VALID").shape == (
        2,
        0,
    )


def test_non_contiguous_data_is_read_by_value(device):
    x = torch.arange(24, dtype=torch.float32, device=device).reshape(4, 6).t()
    np.testing.assert_array_equal(as_numpy(cm.frobulate(x, [1, 2])), as_numpy(x) + 3)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda d: cm.frobulate(torch.ones(3, device=d), []), "1 to 1048576"),
        (lambda d: cm.frobulate(torch.ones(3, device=d), [2**31]), "fit int32"),
        (lambda d: cm.frobulate(torch.ones(3, device=d), [1.5]), "int32"),
        (lambda d: cm.frobulate(torch.ones(3, dtype=torch.int32, device=d), [1]), "float32 or"),
        (
            lambda d: cm.frobulate(torch.ones(3, device=d), torch.ones(2, 2, dtype=torch.int32)),
            "rank 1",
        ),
        (lambda d: cm.frobulate(torch.ones(3, device=d), torch.ones(2)), "int32"),
        # The kernel's own words for dtypes it does not take, past the wrapper.
        (
            lambda d: torch.ops.constmem.polyval(
                torch.ones(3, dtype=torch.int16, device=d), torch.ones(2)
            ),
            "x must be float32, float64, float16 or bfloat16; got int16",
        ),
        (
            lambda d: torch.ops.constmem.polyval(
                torch.ones(3, dtype=torch.bool, device=d), torch.ones(2)
            ),
            "x must be float32, float64, float16 or bfloat16; got bool",
        ),
        (
            lambda d: torch.ops.constmem.polyval(
                torch.ones(3, dtype=torch.complex64, device=d), torch.ones(2)
            ),
            "x must be float32, float64, float16 or bfloat16; got complex64",
        ),
        (
            lambda d: cm.polyval(torch.ones(1048577, device=d), torch.ones(3, device=d)),
            "1 to 1048576",
        ),
        (
            lambda d: cm.polyval(torch.ones(3, dtype=torch.float64), torch.ones(3, device=d)),
            "coeffs must be float32; got float64",
        ),
        (lambda d: cm.fir_filter(torch.tensor(1.0, device=d), [1.0]), "rank 1 or more"),
        (lambda d: cm.fir_filter(torch.ones(3, device=d), [1.0], padding="FULL"), "SAME"),
        (lambda d: cm.fir_filter(torch.ones(3, device=d), [1.0] * 1048577), "1 to 1048576"),
        (lambda d: cm.interpolate(torch.ones(3, device=d), [1.0], 0, 1), "2 to 1048576"),
        (lambda d: cm.interpolate(torch.ones(3, device=d), torch.ones(1), 0, 1), "2 to 1048576"),
        (lambda d: cm.interpolate(torch.ones(3, device=d), [1.0, 2.0], 1, 0), "lo < hi"),
        (lambda d: cm.interpolate(torch.ones(3, device=d), [1.0, 2.0], 0, float("nan")), "finite"),
    ],
)
def test_bad_input_raises_and_the_next_call_is_right(device, call, message):
    with pytest.raises((RuntimeError, ValueError), match=message):
        call(device)
    np.testing.assert_array_equal(
        as_numpy(cm.frobulate(torch.zeros(2, device=device), [1, 2])), [3, 3]
    )


@pytest.mark.parametrize(
    ("op", "data", "table", "attrs"),
    [
        ("polyval", torch.ones(3, dtype=torch.int32), torch.ones(2), ()),
        ("fir_filter", torch.ones(3), torch.ones(2, dtype=torch.float64), ("SAME",)),
        ("fir_filter", torch.tensor(1.0), torch.ones(1), ("SAME",)),
        ("frobulate", torch.ones(3), torch.ones(2, 2, dtype=torch.int32), ()),
        (  # 5 row taps are no set per image for 2 images
            "separable_filter",
            torch.ones(2, 3, 4, 4),
            (torch.ones(5), torch.ones(4)),
            ("per_image", "zeros", "channels_first"),
        ),
        ("upfirdn", torch.ones(2, 5), torch.ones(3), (0, 1)),
        ("interpolate", torch.ones(3), torch.ones(4), (1.0, 0.0)),
    ],
)
def test_a_kernels_refusal_is_the_same_value_error_in_python(device, op, data, table, attrs):
    """Where PyTorch turns a stable-ABI kernel's exception into a RuntimeError (newer releases),
    the functions find the refusal again in Python: the same words, as a ValueError."""
    several = isinstance(table, tuple)  # an op's several tables, in order
    data = data.to(device)
    table = tuple(t.to(device) for t in table) if several else table.to(device)
    with pytest.raises((ValueError, RuntimeError)) as raised:
        with torch._C._AutoDispatchBelowAutograd():
            getattr(torch.ops.constmem, op).default(data, *(table if several else (table,)), *attrs)
    refusal = cm._refusal(cm.OPS[op], data, table, attrs)
    assert isinstance(refusal, ValueError)
    assert str(refusal) == str(raised.value)
    assert cm._refusal(cm.OPS["polyval"], data.float(), torch.ones(2, device=device), ()) is None


def test_a_cached_static_table_is_reused_only_for_values_of_the_same_types(device):
    """[1, 2] is cached as an int32 table; [1.0, 2.0] and [True, 2] equal it but are refused."""
    x = torch.zeros(3, device=device)
    for _ in range(2):
        np.testing.assert_array_equal(as_numpy(cm.frobulate(x, [1, 2])), [3, 3, 3])
    for bad in ([1.0, 2.0], [True, 2], (1.0, 2)):
        with pytest.raises(ValueError, match="table must be integers that fit int32"):
            cm.frobulate(x, bad)
    np.testing.assert_array_equal(as_numpy(cm.frobulate(x, (1, 2))), [3, 3, 3])


def test_a_static_list_changed_in_place_is_read_again(device):
    """The same list found by identity holds its table only while its items are the same: a
    changed entry is read again, and one of another type equal in value is refused again."""
    x = torch.zeros(3, device=device)
    table = [1, 2]
    for _ in range(2):
        np.testing.assert_array_equal(as_numpy(cm.frobulate(x, table)), [3, 3, 3])
    table[1] = 5
    np.testing.assert_array_equal(as_numpy(cm.frobulate(x, table)), [6, 6, 6])
    table[1] = 5.0  # equal to 5, but a float in an int32 table
    with pytest.raises(ValueError, match="table must be integers that fit int32"):
        cm.frobulate(x, table)
    table.append(1)
    table[1] = 5
    np.testing.assert_array_equal(as_numpy(cm.frobulate(x, table)), [7, 7, 7])


def test_a_tuple_static_table_found_again_by_identity_is_the_same_table(device):
    """The very same tuple again is found by identity: for each table of an op and each op its
    own, in the data's dtype; a tuple of other than Python numbers by value each time."""
    x = torch.arange(12.0, device=device).view(1, 1, 3, 4)
    taps = (0.25, 0.5, 0.25)
    expected = cm.separable_filter(x, list(taps), [1.0, 2.0, 3.0])
    for _ in range(3):  # the same tuple as one table, then the other
        torch.testing.assert_close(cm.separable_filter(x, taps, [1.0, 2.0, 3.0]), expected)
        torch.testing.assert_close(
            cm.separable_filter(x, [1.0, 2.0, 3.0], taps),
            cm.separable_filter(x, [1.0, 2.0, 3.0], list(taps)),
        )
        # Both tables the same tuple; float64 data, a float64 table.
        both = cm.separable_filter(x.double(), taps, taps)
        assert both.dtype == torch.float64
        torch.testing.assert_close(both, cm.separable_filter(x.double(), list(taps), list(taps)))
    ints = (1, 2)
    for _ in range(2):
        np.testing.assert_array_equal(
            as_numpy(cm.frobulate(x.view(-1), ints)), as_numpy(x.view(-1)) + 3
        )
        # The same tuple for another op: its own table, float32 where Frobulate's is int32.
        np.testing.assert_allclose(as_numpy(cm.polyval(ints, x.view(-1))), as_numpy(x.view(-1)) + 2)
    with pytest.raises(ValueError, match="row_taps must have 1 to"):
        cm.separable_filter(x, (), taps)
    values = as_numpy(x.view(-1))
    for table in ((np.float32(2.0), 1.0), (2, 1.0), (2.0, 1.0)):  # looked up by value, by identity
        for _ in range(2):
            np.testing.assert_allclose(as_numpy(cm.polyval(table, x.view(-1))), 2 * values + 1)


def test_attributes_that_passed_once_are_checked_again_by_type_and_value(device):
    """A call site's attributes are remembered once checked: equal values of another type, a
    value beyond the data's dtype and a 0-d tensor changed in place are each seen again."""
    x = torch.linspace(-1, 1, 9, device=device)
    knots = [0.0, 1.0, 4.0]

    def expected(lo, hi):
        return np.interp(as_numpy(x), np.linspace(lo, hi, 3), knots)

    for _ in range(2):
        np.testing.assert_allclose(as_numpy(cm.interpolate(x, knots, -1, 1)), expected(-1, 1))
    with pytest.raises(ValueError, match="hi must be finite in float32"):
        cm.interpolate(x, knots, -1, 1e300)
    rows = x.view(1, 9)
    for _ in range(2):
        assert cm.upfirdn(rows, [1.0, 2.0], up=2, down=1).shape == (1, 18)
    cm.upfirdn(rows, [1.0, 2.0], up=1, down=1)
    with pytest.raises(ValueError, match="up must be an integer; got True"):
        cm.upfirdn(rows, [1.0, 2.0], up=True, down=1)
    with pytest.raises(ValueError, match=r"up must be an integer; got 2\.0"):
        cm.upfirdn(rows, [1.0, 2.0], up=2.0, down=1)
    hi = torch.tensor(1.0)
    np.testing.assert_allclose(as_numpy(cm.interpolate(x, knots, -1, hi)), expected(-1, 1))
    hi.fill_(3.0)  # the same object, another value
    np.testing.assert_allclose(as_numpy(cm.interpolate(x, knots, -1, hi)), expected(-1, 3))


@pytest.mark.skipif(torch.cuda.device_count() == 0, reason="needs a CUDA device")
def test_cpu_data_with_a_cuda_table_is_refused():
    with pytest.raises(ValueError, match=r"table must be on the CPU or on data's device \(cpu\)"):
        cm.frobulate(torch.ones(3), torch.ones(2, dtype=torch.int32, device="cuda"))


def test_gradients_match_finite_differences(device):
    x = torch.linspace(-1, 1, 22, dtype=torch.float64, device=device).reshape(2, 11)
    coeffs = torch.tensor([0.5, -1.0, 2.0, 0.25], dtype=torch.float64, device=device)
    taps = torch.tensor([0.25, 0.5, -0.75], dtype=torch.float64, device=device)
    for fn, inputs in [
        (lambda a: cm.frobulate(a, [3, 4]), (x,)),
        (cm.polyval, (coeffs, x)),
        (lambda a: cm.polyval([0.5, -1.0, 2.0, 0.25], a), (x,)),
        (lambda a, t: cm.fir_filter(a, t, padding="SAME"), (x, taps)),
        (lambda a, t: cm.fir_filter(a, t, padding="VALID"), (x, taps)),
        (lambda a: cm.fir_filter(a, [0.25, 0.5, -0.75, 1.0]), (x,)),
        (lambda a, k: cm.interpolate(a + 0.013, k, -0.9, 0.8), (x, taps)),
        (lambda a: cm.interpolate(a + 0.013, [0.5, -1.0, 2.0, 0.25], -0.9, 0.8), (x,)),
    ]:
        inputs = tuple(t.clone().requires_grad_(True) for t in inputs)
        assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-7)
    # More taps than samples: no outputs, and gradients of zeros.
    short = x[:, :2].clone().requires_grad_(True)
    taps = taps.clone().requires_grad_(True)
    cm.fir_filter(short, taps, padding="VALID").sum().backward()
    assert not short.grad.any() and not taps.grad.any()


@pytest.mark.parametrize("count", [1, 17, 100, 4096])
def test_coefficient_gradient_of_many_coefficients_matches_float64(device, count):
    rng = np.random.default_rng(count)
    x, grad = rng.uniform(-1.02, 1.02, size=(2, 37)), rng.standard_normal((2, 37))
    expected, magnitude = polyval_coefficient_gradient(count, x, grad)
    coeffs = torch.tensor(rng.standard_normal(count), device=device, requires_grad=True)
    cm.polyval(coeffs, torch.tensor(x, device=device)).backward(torch.tensor(grad, device=device))
    assert np.all(np.abs(as_numpy(coeffs.grad) - expected) <= 1e-13 * magnitude)


def opcheck_cases(device):
    x32 = torch.randn(3, 40, device=device)
    x64 = x32.double()
    for x in (x32, x64):
        np_dtype = np.float32 if x.dtype == torch.float32 else np.float64
        yield torch.ops.constmem.frobulate, (x, torch.arange(5, dtype=torch.int32, device=device))
        yield torch.ops.constmem.frobulate, (x, torch.arange(5, dtype=torch.int32))
        yield torch.ops.constmem.frobulate_static, (x, [1, 2, 3])
        for table_device in {device, "cpu"}:
            c = torch.tensor([0.5, -1.0, 2.0], dtype=x.dtype, device=table_device)
            yield (
                torch.ops.constmem.polyval,
                (x.clone().requires_grad_(True), c.requires_grad_(True)),
            )
            t = torch.tensor([0.25, 0.5, 0.75], dtype=x.dtype, device=table_device)
            for padding in ("SAME", "VALID"):
                yield (
                    torch.ops.constmem.fir_filter,
                    (x.clone().requires_grad_(True), t.requires_grad_(True), padding),
                )
        yield torch.ops.constmem.polyval_static, (x, np.asarray([0.5, 2.0], np_dtype).tolist())
        yield torch.ops.constmem.fir_filter_static, (x, [0.25, 0.5], "VALID")
        for table_device in {device, "cpu"}:
            k = torch.tensor([0.5, -1.0, 2.0, 0.0], dtype=x.dtype, device=table_device)
            yield (
                torch.ops.constmem.interpolate,
                (x.clone().requires_grad_(True), k.requires_grad_(True), -1.0, 1.5),
            )
        yield torch.ops.constmem.interpolate_static, (x, [0.5, 2.0, 1.0], -2.0, 2.0)


def test_opcheck(device):
    for op, args in opcheck_cases(device):
        torch.library.opcheck(op, args)


@pytest.mark.slow  # torch.compile of every op (about 12 s): scripts/test-slow.sh
def test_compile_fullgraph_traces_every_op(device):
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()

    @torch.compile(fullgraph=True)
    def pipeline(x, coeffs, taps):
        y = cm.frobulate(x, [1, -2, 3])
        y = cm.polyval(np.asarray([1.0, 0.5]), y)  # a NumPy table: a host tensor of the graph
        y = cm.polyval([0.5, 0.25], cm.polyval(coeffs, y))
        y = cm.interpolate(cm.interpolate(y, coeffs, -2.0, 2.0), [0.0, 1.0, -1.0], -1.0, 1.0)
        return cm.fir_filter(y, taps, padding="SAME"), cm.fir_filter(y, [0.5, 0.5], padding="VALID")

    x = torch.randn(4, 64, device=device)
    coeffs = torch.tensor([0.1, -0.2, 0.3], device=device)
    taps = torch.tensor([0.25, 0.5, 0.25], device=device)
    eager = pipeline._torchdynamo_orig_callable(x, coeffs, taps)
    for _ in range(2):  # a new table tensor's values take effect without recompiling
        for compiled, expected in zip(pipeline(x, coeffs, taps), eager, strict=True):
            np.testing.assert_array_equal(as_numpy(compiled), as_numpy(expected))
        coeffs = coeffs * 2
        eager = pipeline._torchdynamo_orig_callable(x, coeffs, taps)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1  # compiled once


@pytest.mark.skipif(torch.cuda.device_count() == 0, reason="needs a CUDA device")
def test_reduce_overhead_mode_replays_graphs_with_changing_tables():
    torch._dynamo.reset()

    @torch.compile(mode="reduce-overhead")
    def step(x, coeffs, taps):
        return cm.fir_filter(cm.polyval(coeffs, x * 2) + 1, taps)

    x = torch.randn(8, 1000, device="cuda")
    captured = cm.upload_stats()["captured_launch"]
    for i in range(6):
        coeffs = torch.tensor([1.0, float(i), -1.0] * 100, device="cuda")
        taps = torch.randn(63, device="cuda")
        expected = cm.fir_filter(cm.polyval(coeffs, x * 2) + 1, taps)
        np.testing.assert_array_equal(as_numpy(step(x, coeffs, taps)), as_numpy(expected))
    assert cm.upload_stats()["captured_launch"] > captured, "Inductor captured the ops"


def _graph_cases():
    """(name, op over (x, table), CUDA table, host table) for every op."""
    rng = np.random.default_rng(5)
    return [
        (
            "frobulate",
            lambda x, t: cm.frobulate(x, t),
            lambda: torch.from_numpy(rng.integers(-99, 99, 2000, dtype=np.int32)),
        ),
        (
            "polyval",
            lambda x, t: cm.polyval(t, x),
            lambda: torch.from_numpy(rng.standard_normal(300).astype(np.float32) / 300),
        ),
        (
            "fir_filter",
            lambda x, t: cm.fir_filter(x.reshape(16, -1), t).reshape(-1),
            lambda: torch.from_numpy(rng.standard_normal(63).astype(np.float32)),
        ),
        (
            "interpolate",
            lambda x, t: cm.interpolate(x, t, -2.0, 2.0),
            lambda: torch.from_numpy(rng.standard_normal(3000).astype(np.float32)),
        ),
    ]


@pytest.mark.skipif(torch.cuda.device_count() == 0, reason="needs a CUDA device")
@pytest.mark.parametrize(
    "name, op, new_table", _graph_cases(), ids=[case[0] for case in _graph_cases()]
)
def test_cuda_graph_replays_are_bitwise_equal_to_eager_calls(name, op, new_table):
    """Captured with a CUDA table (read at every replay as it is then), a small and a large CPU
    table and a static one (each the graph's, as captured), then replayed with changing inputs
    and changing CUDA tables."""
    del name
    x = torch.randn(16 * 1024, device="cuda")
    cuda_table = new_table().cuda()
    cpu_large = new_table()
    cpu_small = cpu_large[:50].clone()
    static = cpu_large[:40].tolist()
    graph = torch.cuda.CUDAGraph()
    op(x, cuda_table)  # warm up outside the capture, as torch.cuda.graph asks
    torch.cuda.synchronize()
    with torch.cuda.graph(graph):
        outs = [op(x, cuda_table), op(x, cpu_large), op(x, cpu_small), op(x, static)]
    captured = (cpu_large.clone(), cpu_small.clone(), list(static))
    cpu_large.zero_()  # the graph has its own copies
    cpu_small.zero_()
    for _ in range(20):
        x.copy_(torch.randn_like(x))
        cuda_table.copy_(new_table())
        graph.replay()
        eager = [op(x, cuda_table), *(op(x, t) for t in captured)]
        for got, want in zip(outs, eager, strict=True):
            np.testing.assert_array_equal(as_numpy(got), as_numpy(want))


@pytest.mark.skipif(torch.cuda.device_count() == 0, reason="needs a CUDA device")
def test_runs_on_the_current_stream_and_streams_do_not_share_tables():
    """Two streams upload different tables into the one bank, interleaved, many times: each
    result must be its own table's (the hazard-off build fails this: torch_streams.py)."""
    from torch_streams import run_streams

    mismatches, total = run_streams(rounds=200)
    assert total > 0
    assert mismatches == 0


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_two_devices_from_two_threads():
    """cuda:0 and cuda:1 from a thread each: every device has its own banks and streams."""
    import threading

    results = {}

    def work(index):
        device = f"cuda:{index}"
        x = torch.zeros(1 << 16, device=device)
        table = torch.full((3000,), index + 1, dtype=torch.int32, device=device)
        bad = 0
        for _ in range(200):
            bad += int((cm.frobulate(x, table) != 3000.0 * (index + 1)).any())
        results[index] = bad

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {0: 0, 1: 0}


def test_the_gradient_namespace_has_the_standard_functions_and_sigmoid():
    from constmem.torch._library import TorchArrays

    F = TorchArrays(cm.OPS["polyval"], {})
    t = torch.linspace(-3, 3, 7, dtype=torch.float64)
    values = t.numpy()
    np.testing.assert_allclose(F.sigmoid(t).numpy(), 1 / (1 + np.exp(-values)), rtol=1e-15)
    np.testing.assert_allclose(F.exp(t).numpy(), np.exp(values), rtol=1e-15)
    np.testing.assert_allclose(F.tanh(t).numpy(), np.tanh(values), rtol=1e-15)
    assert F.sum(t).item() == pytest.approx(values.sum())

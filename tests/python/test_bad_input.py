# SPDX-License-Identifier: Apache-2.0
"""The same rules for bad input in every framework, for every op of the registry and every table
form: the framework's own error kind, a message that names the argument, what was expected and
what was received, worded alike everywhere; and the next call right.

Rules: the data has one of the op's dtypes (the registry's list: float32, float64, uint8); a tensor
table is a vector of the op's table dtype exactly (int32, or the data's compute dtype) on the host
or on the data's device (never the meta device or another GPU); a sequence table holds numbers of
the right kind; the table's size is within the op's limits. An op with several tables applies them
to each, under its own name, the other tables good.
"""

import dataclasses
import importlib.util

import numpy as np
import pytest
from constmem import _libraries, _registry
from constmem import ops as descriptions

FRAMEWORKS = [
    name
    for name, module in (("torch", "torch"), ("jax", "jax"), ("tensorflow", "tensorflow"))
    if importlib.util.find_spec(module) is not None
]


def registry():
    for framework in FRAMEWORKS:
        path = _libraries.library_path(framework)
        if _libraries.library_info(framework):
            return _registry.read_registry(path)
    pytest.skip("no op library built")


OPS = sorted(registry().values(), key=lambda spec: spec.name)


def example_attrs(spec):
    """Attributes every op accepts: defaults, else the first choice, 1, or increasing floats."""
    defaults = getattr(descriptions.describe(spec.name), "DEFAULTS", {})
    values = {}
    for i, attr in enumerate(spec.attrs):
        if attr.name in defaults:
            values[attr.name] = defaults[attr.name]
        else:
            values[attr.name] = {"choice": attr.choices[:1] and attr.choices[0], "int64": 1}.get(
                attr.kind, -1.0 + 2.0 * i
            )
    return values


class Framework:
    """One framework's ops, tensors and error kind, on the CPU and each GPU it sees."""

    def __init__(self, name):
        self.name = name
        if name == "torch":
            import constmem.torch as ops
            import torch

            self.errors = (ValueError,)
            self.devices = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
            self.tensor = lambda values, dtype, device: torch.tensor(
                values, dtype=getattr(torch, dtype), device=device
            )
        elif name == "jax":
            import constmem.jax as ops
            import jax

            jax.config.update("jax_enable_x64", True)
            self.errors = (ValueError,)
            self.devices = jax.devices("cpu") + [d for d in jax.devices() if d.platform == "gpu"]
            self.tensor = lambda values, dtype, device: jax.device_put(
                np.asarray(values, dtype), device
            )
        else:
            import constmem.tensorflow as ops
            import tensorflow as tf

            self.errors = (tf.errors.InvalidArgumentError,)
            self.devices = ["/CPU:0"] + [
                f"/GPU:{i}" for i in range(len(tf.config.list_logical_devices("GPU")))
            ]

            def tensor(values, dtype, device):
                with tf.device(device):
                    return tf.identity(tf.constant(np.asarray(values, dtype)))

            self.tensor = tensor
        self.ops = ops

    def call(self, spec, data, tables, attrs):
        """The op's function on data and its tables (one per table, in order)."""
        description = descriptions.describe(spec.name)
        arguments = {spec.data: data, **dict(zip(spec.table_names, tables, strict=True)), **attrs}
        positional = [arguments.pop(name) for name in description.SIGNATURE]
        return getattr(self.ops, spec.name)(*positional, **arguments)

    def numpy(self, value):
        return np.asarray(value.cpu() if self.name == "torch" else value)


@pytest.fixture(params=FRAMEWORKS, scope="module")
def framework(request):
    return Framework(request.param)


def good_table(spec, size):
    return list(range(1, size + 1)) if spec.int32_table else [0.5 * j for j in range(size)]


def good_tables(spec):
    """A good table for each of the op's tables: its fewest entries."""
    return [good_table(spec.table_spec(i), t.min_size) for i, t in enumerate(spec.tables)]


def expect(framework, fragment, spec, data, tables, attrs):
    """framework's op on (data, tables) raises its error kind, with `fragment` in the message."""
    with pytest.raises(framework.errors) as error:
        framework.numpy(framework.call(spec, data, tables, attrs))
    assert fragment in str(error.value), str(error.value)


TABLES = [(spec, i) for spec in OPS for i in range(len(spec.tables))]


@pytest.mark.parametrize(
    ("spec", "index"), TABLES, ids=lambda v: v.name if hasattr(v, "name") else str(v)
)
def test_every_rule_in_every_form(framework, spec, index):
    attrs = example_attrs(spec)
    goods = good_tables(spec)
    one = spec.table_spec(index)  # the table whose rules are tried; the others stay good

    def tables(value, make=lambda values, dtype=None: values):
        return [
            value if j == index else make(g, spec.table_spec(j).table_dtype("float32"))
            for j, g in enumerate(goods)
        ]

    table_dtype = one.table_dtype("float32")
    for device in framework.devices:
        data = framework.tensor(np.linspace(-1, 1, 24).reshape(2, 12), "float32", device)
        good = goods[index]
        expected = framework.numpy(framework.call(spec, data, tables(good), attrs))
        forms = {
            "static": lambda values, dtype=None: values,
            "tensor on the data's device": lambda values, dtype=table_dtype, d=device: (
                framework.tensor(values, dtype, d)
            ),
            "tensor on the host": lambda values, dtype=table_dtype: framework.tensor(
                values, dtype, framework.devices[0]
            ),
        }
        if framework.name == "jax" and device != framework.devices[0]:
            del forms["tensor on the host"]  # JAX's host tables are NumPy's: the static form
        for form, make in forms.items():
            for size in (one.min_table - 1, one.max_table + 1):
                message = f"{one.table} must have {one.min_table} to {one.max_table} entries"
                expect(
                    framework,
                    f"{message}; got {size}",
                    spec,
                    data,
                    tables(make(good_table(one, size)), make),
                    attrs,
                )
            if form != "static":
                wrong = "float32" if one.int32_table else "float64"
                expect(
                    framework,
                    f"{one.table} must be {table_dtype}; got {wrong}",
                    spec,
                    data,
                    tables(make(good, wrong), make),
                    attrs,
                )
            ints = framework.tensor(np.arange(24).reshape(2, 12), "int32", device)
            expect(
                framework,
                _registry.data_dtype_message(spec, "int32"),
                spec,
                ints,
                tables(make(good), make),
                attrs,
            )
            # The process keeps running and the next call is right.
            np.testing.assert_array_equal(
                framework.numpy(framework.call(spec, data, tables(make(good), make), attrs)),
                expected,
                form,
            )
        kind = "integers that fit int32" if one.int32_table else "real numbers"
        expect(
            framework,
            f"{one.table} must be {kind}",
            spec,
            data,
            tables(["a"] * one.min_table),
            attrs,
        )
        # A bool is no number of a table in any framework, beside integers or alone.
        bools = [True, *good_table(one, one.min_table)[1:]]
        expect(framework, f"{one.table} must be {kind}; got True", spec, data, tables(bools), attrs)


def torch_tables(torch, spec, device):
    """Good tensor tables of the op on `device`."""
    return [
        torch.tensor(g, dtype=torch.int32 if spec.tables[i].int32 else torch.float32, device=device)
        for i, g in enumerate(good_tables(spec))
    ]


@pytest.mark.parametrize(
    ("spec", "index"), TABLES, ids=lambda v: v.name if hasattr(v, "name") else str(v)
)
def test_a_table_on_the_meta_device_is_refused(spec, index):
    torch = pytest.importorskip("torch")
    import constmem.torch as cm

    framework = Framework("torch")
    attrs = example_attrs(spec)
    one = spec.table_spec(index)
    for device in framework.devices:
        data = torch.linspace(-1, 1, 24, device=device).reshape(2, 12)
        tables = torch_tables(torch, spec, device)
        tables[index] = tables[index].to("meta")
        expect(
            framework,
            f"{one.table} must be on the CPU or on {spec.data}'s device ({device}); got a "
            "tensor on meta",
            spec,
            data,
            tables,
            attrs,
        )
        # The raw op too, past the wrapper: its fake kernel answers for the meta tensor.
        op = getattr(torch.ops.constmem, spec.name)
        values = [attrs[a.name] for a in spec.attrs]
        with pytest.raises((ValueError, RuntimeError), match="must be on the CPU"):
            op(data, *tables, *values).cpu()
    assert cm is not None


CHOICE_OPS = [spec for spec in OPS if any(a.kind == "choice" for a in spec.attrs)]


@pytest.mark.parametrize("spec", CHOICE_OPS, ids=lambda spec: spec.name)
def test_a_raw_op_refuses_a_choice_outside_its_list(spec):
    """Past every wrapper, the op library's kernel refuses a choice its description does not list
    (rather than running as the default), and the next call is right."""
    torch = pytest.importorskip("torch")
    import constmem.torch  # noqa: F401 (registers torch.ops.constmem)

    framework = Framework("torch")
    attrs = example_attrs(spec)
    op = getattr(torch.ops.constmem, spec.name)
    for device in framework.devices:
        data = torch.linspace(-1, 1, 24, device=device).reshape(2, 12)
        tables = torch_tables(torch, spec, device)
        values = [attrs[a.name] for a in spec.attrs]
        expected = op(data, *tables, *values).cpu()
        for i, attr in enumerate(spec.attrs):
            if attr.kind != "choice":
                continue
            bad = list(values)
            bad[i] = "BAD"
            listed = "/".join(attr.choices)
            with pytest.raises(ValueError, match=f"{attr.name} must be one of {listed}; got 'BAD'"):
                op(data, *tables, *bad).cpu()
        np.testing.assert_array_equal(op(data, *tables, *values).cpu(), expected)


def test_a_table_of_one_size_is_worded_as_such():
    spec = dataclasses.replace(OPS[0], min_table=1, max_table=1)
    assert _registry.size_message(spec, 2) == f"{spec.table} must have exactly 1 entry; got 2"
    spec = dataclasses.replace(OPS[0], min_table=3, max_table=3)
    with pytest.raises(ValueError, match=f"^{spec.table} must have exactly 3 entries; got 4$"):
        _registry.check_size(spec, 4)

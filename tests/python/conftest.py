# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures and markers, in the style of tensorflow/addons' device helpers.

- `device`: a test that takes it runs once on the CPU and once on each GPU TensorFlow sees.
- `@pytest.mark.gpu`: the test needs a GPU and is skipped where TensorFlow sees none.

The PyTorch tests (test_torch*.py) have fixtures of their own and run where TensorFlow is not
installed; the TensorFlow tests are not collected there.
"""

import glob
import importlib.util
import os

import pytest

GPUS = []
if importlib.util.find_spec("tensorflow") is not None:
    import tensorflow as tf

    # Tests that start processes of their own (SavedModels, the multi-device scripts) need GPU
    # memory too: this process takes only what it uses, instead of TensorFlow's default of nearly
    # all.
    for gpu in tf.config.list_physical_devices("GPU"):
        tf.config.experimental.set_memory_growth(gpu, True)
    GPUS = [f"/GPU:{i}" for i in range(len(tf.config.list_logical_devices("GPU")))]
else:
    WITHOUT_TENSORFLOW = (
        "test_bad_input.py",
        "test_distributions.py",
        "test_fft_route.py",
        "test_jax.py",
        "test_layering.py",
        "test_separable_filter.py",
        "test_sharding_jax.py",
        "test_sharding_plan.py",
        "test_sharding_torch.py",
        "test_torch.py",
        "test_upfirdn.py",
    )  # the rest need TF
    collect_ignore = [
        os.path.basename(path)
        for path in glob.glob(os.path.join(os.path.dirname(__file__), "test_*.py"))
        if os.path.basename(path) not in WITHOUT_TENSORFLOW
    ]


@pytest.fixture(params=["/CPU:0", *GPUS])
def device(request):
    """Each device a test should run on: the CPU and every GPU."""
    return request.param


def pytest_collection_modifyitems(config, items):
    if GPUS:
        return
    skip = pytest.mark.skip(reason="no GPU visible to TensorFlow")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)

# SPDX-License-Identifier: Apache-2.0
"""The demo and the TensorFlow-level benchmarks run end to end on tiny sizes (on the CPU in CI):
the demo's own check against NumPy must pass, and the benchmarks must produce every figure they
promise. No timing is asserted."""

import json

import pytest
from subprocesses import run_python


def run_script(*args):
    return run_python(*args).stdout


@pytest.mark.slow
def test_demo_checks_every_form_against_numpy():
    out = run_script(
        "examples/demo.py", "--elements", "5000", "--table-size", "37", "--iterations", "2"
    )
    for source in ("input", "host", "attr"):
        assert f"{source:<6} check vs NumPy: OK (0 mismatching)" in out


@pytest.mark.slow
def test_tf_bench_smoke_reports_every_form(tmp_path):
    path = tmp_path / "tf_bench.json"
    run_script("bench/tf_bench.py", "--smoke", "--json", str(path))
    report = json.loads(path.read_text())
    assert report["smoke"] is True
    assert set(report["per_call_over_tf_add"]["while"]) == {
        "tf.add",
        "tf.add+bitcast",
        "input",
        "host",
        "attr",
    }
    assert set(report["per_call_over_tf_add"]["unrolled"]) == {"tf.add", "input", "host", "attr"}
    for kind in ("whole", "queued", "steady"):
        assert set(report["elements_per_s"][kind]) == {"tf.add", "input", "host", "attr"}
    assert report["input_while_over_tf_add_bitcast"] > 0


@pytest.mark.slow
def test_table_argument_benchmark_times_every_case():
    out = run_script("bench/tf_table_argument.py")
    assert out.count("us per call") == 4

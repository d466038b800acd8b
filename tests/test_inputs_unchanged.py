"""Inputs unchanged (issue 35, item 2): every input is compared bit for bit before and after each kernel call; a
change is an **input-clobbered** finding naming the tensor and the first changed element, unless the spec declares
it (``outputs_alias``, ``scratch_inputs``). In-out tensors (fused_add_rmsnorm's residual) are outputs."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from verifier.battery import check_kernel
from verifier.declare.registry import load_spec_file
from verifier.launch.callable import run_callable
from verifier.launch.harness import execute
from verifier.results.options import Options
from verifier.spec import CallableKernel, SpecError, dtypes
from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parent.parent
QUICK = Options(level="quick", device="cpu", case="normal_small")


def _softmax(x):
    return torch.softmax(x.float(), -1)


def zeroes_x(inputs, outputs, params, dt):
    outputs["y"].copy_(_softmax(inputs["x"]))
    inputs["x"].zero_()


def subtracts_the_max_in_place(inputs, outputs, params, dt):
    x = inputs["x"]
    x.sub_(x.amax(-1, keepdim=True))  # x as scratch
    outputs["y"].copy_(_softmax(x))


def good(inputs, outputs, params, dt):
    outputs["y"].copy_(_softmax(inputs["x"]))


def _spec(fn, **kw):
    return CallableKernel(name=fn.__name__.replace("_", "-"), op="softmax", fn=fn, dtypes=[dtypes("f32")], **kw)


def test_a_kernel_zeroing_its_input_is_input_clobbered_naming_the_element():
    report = check_kernel(_spec(zeroes_x), QUICK)
    (f,) = [f for f in report.findings if f.check == "input-clobbered"]
    assert report.verdict == "fail" and report.cells[("f32", "input-clobbered")] == "FAIL"
    assert "input 'x'" in f.message and "first at index (0, 0)" in f.message
    assert "0.0 (bits 0x00000000) after" in f.message
    assert f.input == "normal_small" and "--case normal_small" in f.repro
    assert {f.check for f in report.findings} == {"input-clobbered"}  # the outputs are right


def test_scratch_must_be_declared():
    undeclared = check_kernel(_spec(subtracts_the_max_in_place), QUICK)
    assert [f.check for f in undeclared.findings] == ["input-clobbered"]
    declared = check_kernel(_spec(subtracts_the_max_in_place, scratch_inputs=("x",)), QUICK)
    assert declared.verdict == "pass" and not declared.findings, declared.findings
    assert check_kernel(_spec(good), QUICK).cells[("f32", "input-clobbered")] == "pass"


def test_nan_payloads_compare_as_bits():
    """A NaN left alone is unchanged (a float compare would call every NaN changed); a NaN rewritten with another
    payload is a change (a float compare cannot see it)."""
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    x.view(np.int32)[0, 3] = 0x7FC00123  # a NaN with a payload

    def canonical_nans(inputs, outputs, params, dt):
        outputs["y"].copy_(_softmax(inputs["x"]))
        t = inputs["x"]
        t[torch.isnan(t)] = float("nan")  # torch's NaN: payload 0x7fc00000

    spec = _spec(good)
    assert not execute(run_callable, spec, {"x": x}, spec.dtypes[0], spec.op_params(), "cpu").clobbered
    spec = _spec(canonical_nans)
    out = execute(run_callable, spec, {"x": x}, spec.dtypes[0], spec.op_params(), "cpu")
    assert "first at index (0, 3)" in out.clobbered["x"] and "bits 0x7fc00123" in out.clobbered["x"]


def test_an_in_out_tensor_is_an_output_not_clobbered():
    (spec,) = [k for k in load_spec_file(ROOT / "kernels" / "torch" / "spec.py") if k.op == "fused_add_rmsnorm"][:1]
    report = check_kernel(spec, Options(level="quick", device="cpu", case="normal_small"))
    assert not [f for f in report.findings if f.check == "input-clobbered"], report.findings


@pytest.mark.parametrize("names, words", [(("z",), "'z', not an input"), (("x", "x"), "named twice"),
                                          ("y", "'y', not an input")])
def test_scratch_inputs_are_validated(names, words):
    with pytest.raises(SpecError, match=words):
        _spec(good, scratch_inputs=names)


def test_an_aliased_or_in_out_input_cannot_be_scratch():
    with pytest.raises(SpecError, match="an aliased input is an output already"):
        CallableKernel(name="k", op="rmsnorm", fn=good, dtypes=[dtypes("f32")], outputs_alias={"y": "x"},
                       scratch_inputs=("x",))
    with pytest.raises(SpecError, match="not an input of op fused_add_rmsnorm"):
        CallableKernel(name="k", op="fused_add_rmsnorm", fn=good, dtypes=[dtypes("f32")], scratch_inputs=("residual",))


def test_a_triton_kernel_writing_its_input_in_the_interpreter(tmp_path):
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed (pip install 'kernel-verifier[triton]')")
    (tmp_path / "zero_x.py").write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def _zero(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.zeros([BLOCK], tl.float32), mask=offs < n)

        def launch(inputs, outputs, params, dt):
            x = inputs["x"]
            outputs["y"].copy_(torch.softmax(x.float(), -1))
            _zero[(triton.cdiv(x.numel(), 1024),)](x, x.numel(), BLOCK=1024)  # x is contiguous in this case
    '''))
    (tmp_path / "tz_spec.py").write_text(textwrap.dedent('''
        from verifier.spec import TritonKernel, dtypes
        KERNELS = [TritonKernel(name="triton-zero-x", op="softmax", module="zero_x.py", launcher="launch",
                                dtypes=[dtypes("f32")])]
    '''))
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERIFIER_")}
    p = subprocess.run([sys.executable, "-m", "verifier.cli", "check", "tz_spec.py", "--level", "quick", "--device",
                        "cpu", "--case", "normal_small", "--no-progress", "--format", "json"], capture_output=True,
                       text=True, cwd=tmp_path, env=env, timeout=120)  # a fresh process: the interpreter mode
    assert p.returncode == 1, p.stderr
    (k,) = json.loads(p.stdout)["kernels"]
    assert [f["check"] for f in k["findings"]] == ["input-clobbered"], k["findings"]


_gpu_reason = gpu_and_nvcc_reason  # tests/gpu_requirements.py


@pytest.mark.gpu
@pytest.mark.skipif(_gpu_reason() is not None, reason=_gpu_reason() or "")
def test_a_cuda_kernel_zeroing_its_input_on_driver_buffers():
    zeroes, scratch = load_spec_file(ROOT / "tests" / "data" / "gpu" / "clobber_spec.py")
    opts = Options(level="quick", device="cuda", case="normal_small")
    report = check_kernel(zeroes, opts)
    (f,) = [f for f in report.findings if f.check == "input-clobbered"]
    assert "input 'x'" in f.message and "0.0 (bits 0x00000000) after" in f.message
    assert check_kernel(scratch, opts).verdict == "pass"

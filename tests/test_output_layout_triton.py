"""Triton kernels (the interpreter) writing an output at a layout of their own (``output_layout``): a top-2 router
storing its ids rows E apart (ggml's topk_moe layout), and a group max storing its [M, G] result column-major with a
TMA-padded leading dimension (the Triton runner accepts a declared column-major output: its row stride is 1)."""
from __future__ import annotations

import os

import numpy as np
import pytest

from verifier.launch.triton import activate, triton_mode

pytestmark = pytest.mark.interpreter

MODULE = '''
import triton
import triton.language as tl


@triton.jit
def _top2(x, v, ids, E, IDS_STRIDE, BLOCK: tl.constexpr, WIDE_IDS: tl.constexpr = True):
    r = tl.program_id(0).to(tl.int64)
    ri = r if WIDE_IDS else tl.program_id(0)  # the defect: a 32-bit ids row offset
    c = tl.arange(0, BLOCK)
    z = tl.load(x + r * E + c, mask=c < E, other=-float("inf"))
    p = tl.exp(z - tl.max(z, 0))
    p = p / tl.sum(p, 0)
    i0 = tl.argmax(p, 0)
    v0 = tl.max(p, 0)
    q = tl.where(c == i0, -1.0, p)
    i1 = tl.argmax(q, 0)
    tl.store(v + r * 2, v0)
    tl.store(v + r * 2 + 1, tl.max(q, 0))
    tl.store(ids + ri * IDS_STRIDE, i0.to(tl.int32))
    tl.store(ids + ri * IDS_STRIDE + 1, i1.to(tl.int32))


@triton.jit
def _group_max(x, y, N, LD, GS: tl.constexpr, G: tl.constexpr):
    r = tl.program_id(0)
    g = tl.arange(0, G)
    c = tl.arange(0, GS)
    z = tl.load(x + r * N + g[:, None] * GS + c[None, :])
    tl.store(y + g * LD + r, tl.max(z, 1))  # column-major: column g, LD apart


def top2_at_e(inputs, outputs, params, dt):  # the ids stride is the kernel's own: E
    M, E = inputs["x"].shape
    _top2[(M,)](inputs["x"], outputs["values"], outputs["indices"], E, E, BLOCK=triton.next_power_of_2(E))


def top2_at_e_minus_1(inputs, outputs, params, dt):
    M, E = inputs["x"].shape
    _top2[(M,)](inputs["x"], outputs["values"], outputs["indices"], E, E - 1, BLOCK=triton.next_power_of_2(E))


def top2_at_e_int32(inputs, outputs, params, dt):
    M, E = inputs["x"].shape
    _top2[(M,)](inputs["x"], outputs["values"], outputs["indices"], E, E, BLOCK=triton.next_power_of_2(E),
                WIDE_IDS=False)


def group_max_tma(inputs, outputs, params, dt):
    M, N = inputs["x"].shape
    _group_max[(M,)](inputs["x"], outputs["y"], N, -(-M // 4) * 4, GS=16, G=N // 16)
'''


@pytest.fixture(scope="module")
def interpreted():
    if os.environ.get("VERIFIER_TRITON_MODE", "") == "compiled" or triton_mode() != "interpreter":
        pytest.skip("this process runs Triton compiled; these kernels are checked in the interpreter")
    activate("interpreter")


def _spec(tmp_path, launcher, op="topk_softmax", params=None, **kw):
    from verifier.spec import TritonKernel, dtypes

    path = tmp_path / "out_layout_kernels.py"
    path.write_text(MODULE)
    return TritonKernel(name=launcher.replace("_", "-"), op=op, module=str(path), launcher=launcher,
                        dtypes=[dtypes("f32")], params=params if params is not None else {"k": 2}, **kw)


def _run(tmp_path, launcher, op="topk_softmax", params=None, N=128, **kw):
    from verifier.battery.values import run_case
    from verifier.inputs.cases import random_inputs
    from verifier.results.options import Options
    from verifier.spec import dtypes

    spec = _spec(tmp_path, launcher, op, params, **kw)
    xs = random_inputs(spec, dtypes("f32"), 5, N, np.random.default_rng(0))
    return run_case(spec, dtypes("f32"), "normal_small", xs, Options(device="cpu"))


def test_ids_rows_e_apart_pass_declared_and_fail_undeclared(interpreted, tmp_path):
    from verifier.spec import RowStride

    assert not _run(tmp_path, "top2_at_e", output_layout={"indices": RowStride("N")}).findings
    undeclared = {f.check for f in _run(tmp_path, "top2_at_e").findings}
    assert {"unwritten", "out-of-range-write"} <= undeclared, undeclared
    wrong = _run(tmp_path, "top2_at_e_minus_1", output_layout={"indices": RowStride("N")}).findings
    assert {"value", "unwritten", "out-of-range-write"} <= {f.check for f in wrong}, wrong
    assert any("padding of its declared layout (strides 128, 1)" in f.message for f in wrong)


def _group_max_op():
    from verifier.spec import Op

    def ref(inputs, params):
        x = inputs["x"]
        return {"y": x.view(x.shape[0], -1, params["group_size"]).amax(-1)}

    return Op("test_out_layout_group_max", inputs={"x": "MxN"}, outputs={"y": "MxN/group_size"},
              params={"group_size": 16}, reference=ref)


def test_column_major_group_results_with_a_padded_leading_dimension(interpreted, tmp_path):
    from verifier.spec import ColumnMajor

    op = _group_max_op()
    tma = ColumnMajor(lambda M, N, p: -(-M // 4) * 4)
    ok = _run(tmp_path, "group_max_tma", op=op, params={}, N=64, output_layout={"y": tma})
    assert not ok.findings, ok.findings
    undeclared = _run(tmp_path, "group_max_tma", op="test_out_layout_group_max", params={}, N=64)
    # written column by column into a row-major [5, 4]: wrong values, elements left poisoned, past its end
    assert {"value", "unwritten", "out-of-range-write"} <= {f.check for f in undeclared.findings}, undeclared.findings


def test_the_large_case_lays_declared_rows_on_aliased_host_pages(interpreted, tmp_path):
    """large_index_2pow31 (ids rows 4096 apart past 2^31 elements): the declared rows pass, a 32-bit ids row offset
    fails."""
    from verifier.battery import check_kernel
    from verifier.launch import host_alias
    from verifier.results.options import Options
    from verifier.spec import RowStride

    if not host_alias.supported():
        pytest.skip(host_alias.unsupported_reason())
    within = dict(output_layout={"indices": RowStride("N")},
                  supports=lambda M, N, dt: None if 2 <= N <= 4096 else f"N={N}: one block per row of <= 4096")
    opts = Options(level="ci", device="cpu", case="large_index_2pow31")
    ok = check_kernel(_spec(tmp_path, "top2_at_e", **within), opts)
    assert ok.verdict == "pass" and not ok.findings and ok.judged.get("f32"), (ok.findings, ok.notes)
    bad = check_kernel(_spec(tmp_path, "top2_at_e_int32", **within), opts)  # ids rows 2^31 elements in: wrapped
    unwritten = [f for f in bad.findings if f.check == "unwritten"]
    assert bad.verdict == "fail" and unwritten and "row offset crosses 2^31" in unwritten[0].message, \
        (bad.findings, bad.notes)

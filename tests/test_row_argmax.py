"""Each row's argmax (op row_argmax, verifier/ops/row_argmax.py) and its exact, tie-aware judge
(verifier/judge/argmax.py): ties='first' wants torch.argmax's first index of the maximum, ties='any' any tied index;
-0 ties +0; NaN is the maximum (a kernel skipping NaN declares Contracts(nan_inputs='unsupported')); the optional
value output is x at the kernel's own pick, exactly. The defect twins are caught on the inputs that expose them and
the same last-tie kernel passes once it declares ties='any'."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from verifier.errors import SpecError, UsageError
from verifier.judge import check_output
from verifier.spec import ArgMax, CallableKernel, Contracts, Op, Tensor, dtypes

ROOT = Path(__file__).resolve().parent.parent
F32 = dtypes("f32")
NAN, INF = float("nan"), float("inf")
X = np.array([[1, 3, 3, 0], [NAN, 1, NAN, 2], [-0.0, 0.0, -1, -2], [-INF] * 4, [5, -INF, INF, 2]], np.float32)
FIRST = [1, 0, 0, 0, 2]


def _check(x, index, op="row_argmax", **params):
    return check_output(op, {"x": x}, {"index": np.asarray(index, np.int64)}, F32, params=params)


def test_first_wants_torchs_first_index_and_names_the_tie_rule():
    assert torch.as_tensor(X).argmax(-1).tolist() == FIRST  # the rule stated is torch's own
    assert _check(X, FIRST).ok
    cmp = _check(X, [2, 0, 1, 0, 2])  # later ties: of 3, of -0 / +0
    assert not cmp.ok and cmp.tensors[0].mismatched == 2
    msg = cmp.tensors[0].message()
    assert "ties the maximum 3.0, whose first column is 1" in msg and "params={'ties': 'any'}" in msg
    assert "is a NaN, but the row's first NaN is at column 0" in _check(X, [1, 2, 0, 0, 2]).tensors[0].message()


def test_any_accepts_every_tied_index_and_nothing_else():
    assert _check(X, [2, 2, 1, 3, 2], ties="any").ok
    cmp = _check(X, [0, 1, 2, 0, 0], ties="any")  # below the max; a number in a NaN row; -1 < 0; 5 < inf
    assert cmp.tensors[0].mismatched == 4
    msg = cmp.tensors[0].message()
    assert "index 0 holds 1.0, below the row's maximum 3.0" in msg and "nan_inputs='unsupported'" in msg


def test_an_index_out_of_range_is_a_finding_and_a_wrong_dtype_a_usage_error():
    assert "outside [0, N)" in _check(X, [4, 0, 0, -1, 2]).tensors[0].message()
    with pytest.raises(UsageError, match="index_dtype"):
        check_output("row_argmax", {"x": X}, {"index": np.zeros(5, np.int32)}, F32)
    assert check_output("row_argmax", {"x": X}, {"index": np.asarray(FIRST, np.int32)}, F32,
                        params={"index_dtype": "int32"}).ok


def test_value_is_x_at_the_kernels_own_pick_exactly():
    from verifier.ops import variant_for

    op = variant_for("row_argmax", {"value": True})
    x = np.array([[1.0, 1.0 + 2 ** -23, 0.5]], np.float32)
    run = lambda idx, v, **p: check_output(op, {"x": x}, {"index": np.array([idx]), "value": np.array([v], np.float32)},
                                           F32, params={"value": True, **p})
    assert run(1, x[0, 1]).ok
    assert not run(1, 1.0).ok  # one ULP below the maximum: exact, no budget
    assert run(1, x[0, 1], ties="any").ok and not run(0, 1.0, ties="any").ok  # 1.0 is not the maximum


def test_argmax_rule_is_checked_where_the_op_is_declared():
    ref = lambda i, p: {"idx": i["x"].argmax(-1)}
    mine = Op("my_argmax", inputs={"x": "MxN"}, outputs={"idx": Tensor("M", dtype="int32")}, params={"ties": "any"},
              reference=ref, argmax=ArgMax("idx"))
    assert mine.argmax.index == "idx"
    with pytest.raises(SpecError, match="not an integer"):
        Op("bad_argmax", inputs={"x": "MxN"}, outputs={"idx": "M"}, params={"ties": "first"}, reference=ref,
           argmax=ArgMax("idx"))
    with pytest.raises(SpecError, match="param 'ties'"):
        Op("bad_argmax", inputs={"x": "MxN"}, outputs={"idx": Tensor("M", dtype="int64")}, reference=ref,
           argmax=ArgMax("idx"))


def _battery(spec, case):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    return check_kernel(spec, Options(level="ci", device="cpu", case=case))


def _skip_nan(inputs, outputs, params, dt):  # ggml's `if (val > maxval)`: a NaN never wins
    x = inputs["x"]
    return {"index": torch.where(torch.isnan(x), -torch.inf, x).argmax(-1)}


def test_a_kernel_skipping_nan_fails_unless_it_declares_nan_unsupported():
    spec = CallableKernel(name="skip-nan", op="row_argmax", fn=_skip_nan, dtypes=[F32])
    report = _battery(spec, "argmax_nan")
    assert report.verdict == "fail" and any("nan_inputs='unsupported'" in f.message for f in report.findings)
    declared = CallableKernel(name="skip-nan-declared", op="row_argmax", fn=_skip_nan, dtypes=[F32],
                              contracts=Contracts(nan_inputs="unsupported"))
    assert _battery(declared, "argmax_nan").verdict != "fail"
    assert _battery(declared, "argmax_ties").verdict == "pass"


def _kernel(path, name):
    from verifier.declare.registry import load_spec_file

    return {k.name: k for k in load_spec_file(path)}[name]


DEFECTS = ROOT / "kernels" / "defects" / "triton" / "defects.py"


@pytest.mark.parametrize("name,case", [("defect-triton-argmax-last-tie", "argmax_ties"),
                                       ("defect-triton-argmax-bf16-compare", "argmax_one_ulp"),
                                       ("defect-triton-argmax-no-tail", "argmax_max_last")])
def test_defect_twins_are_caught_on_their_inputs(name, case):
    report = _battery(_kernel(DEFECTS, name), case)
    assert report.verdict == "fail" and {f.check for f in report.findings} == {"value"}, report.findings


@pytest.mark.parametrize("path,name,case", [
    (DEFECTS, "triton-argmax-last-tie-any", "argmax_ties"),
    (ROOT / "kernels" / "triton" / "argmax_spec.py", "triton-row-argmax", "argmax_one_ulp"),
    (ROOT / "kernels" / "triton" / "argmax_spec.py", "triton-row-argmax-int32-value", "argmax_signed_zero"),
])
def test_correct_kernels_pass_the_tie_and_one_ulp_cases(path, name, case):
    report = _battery(_kernel(path, name), case)
    assert report.verdict == "pass", [f.message for f in report.findings]


def test_an_all_neg_inf_row_gives_0_or_the_declared_minus_one():
    x = np.array([[-INF, -INF, -INF], [1, 2, -INF]], np.float32)
    assert _check(x, [0, 1]).ok
    assert _check(x, [-1, 1]).ok  # undeclared, a contract param: either passes (the battery warns)
    cmp = _check(x, [-1, 1], neg_inf_rows="first")
    assert not cmp.ok and "outside [0, N)" in cmp.tensors[0].message()
    assert _check(x, [-1, 1], neg_inf_rows="minus_one").ok
    cmp = _check(x, [0, 1], neg_inf_rows="minus_one")
    assert not cmp.ok and "neg_inf_rows='minus_one' wants -1" in cmp.tensors[0].message()


def _ggml_sentinel(inputs, outputs, params, dt):  # ggml's scan from -FLT_MAX: -1 where nothing is above it
    x = inputs["x"]
    return {"index": x.argmax(-1).masked_fill((x == -torch.inf).all(-1), -1).to(torch.int32)}


def test_the_minus_one_sentinel_passes_with_a_warning_until_declared():
    spec = CallableKernel(name="sentinel", op="row_argmax", fn=_ggml_sentinel, dtypes=[F32],
                          params={"index_dtype": "int32"})
    report = _battery(spec, "argmax_neg_inf")
    assert report.verdict == "pass" and any("declare params={'neg_inf_rows': 'minus_one'}" in f.message
                                            for f in report.findings)
    declared = CallableKernel(name="sentinel-declared", op="row_argmax", fn=_ggml_sentinel, dtypes=[F32],
                              params={"index_dtype": "int32", "neg_inf_rows": "minus_one"})
    assert _battery(declared, "argmax_neg_inf").verdict == "pass" and not _battery(declared, "argmax_neg_inf").findings
    torch_spec = CallableKernel(name="torch-declared-minus-one", op="row_argmax", fn=lambda i, o, p, d: {
        "index": i["x"].argmax(-1)}, dtypes=[F32], params={"neg_inf_rows": "minus_one"})
    assert _battery(torch_spec, "argmax_neg_inf").verdict == "fail"


def _ggml_scan(inputs, outputs, params, dt):
    """ggml's argmax_f32 as it is: start at -FLT_MAX with index -1, keep a column only if it is `>` the best so far:
    -1 where no element is above -FLT_MAX (all -inf, or the lowest finite value: a finfo.min mask)."""
    x = inputs["x"]
    above = x > torch.finfo(x.dtype).min
    index = torch.where(above, x, -torch.inf).argmax(-1).masked_fill(~above.any(-1), -1)
    return {"index": index.to(torch.int32)}


def test_a_row_of_the_lowest_finite_value_is_not_an_all_neg_inf_row():
    """argmax_lowest_finite: rows of torch.finfo.min hold finite numbers, so neg_inf_rows='minus_one' does not
    excuse ggml's -1 there (its scan never leaves its -FLT_MAX start); torch's argmax passes."""
    params = {"index_dtype": "int32", "neg_inf_rows": "minus_one"}
    ggml = CallableKernel(name="ggml-scan", op="row_argmax", fn=_ggml_scan, dtypes=[F32], params=params,
                          contracts=Contracts(nan_inputs="unsupported"))
    assert _battery(ggml, "argmax_neg_inf").verdict == "pass"  # what it declares
    report = _battery(ggml, "argmax_lowest_finite")
    assert report.verdict == "fail" and {f.check for f in report.findings} == {"value"}, report.findings
    torch_spec = CallableKernel(name="torch-argmax", op="row_argmax", fn=lambda i, o, p, d: {
        "index": i["x"].argmax(-1)}, dtypes=[F32, dtypes("f16"), dtypes("bf16")])
    ok = _battery(torch_spec, "argmax_lowest_finite")
    assert ok.verdict == "pass" and not ok.findings, [f.message for f in ok.findings]

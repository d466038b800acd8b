"""Ops of the user's own (verifier.spec.Op): declaration errors, the registry, the worked example of docs/specs.md
(callables judged on the CPU; CUDA kernels built and linted), ``verifier ops`` and ``verifier cases --spec``."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from op_registry import registry  # noqa: F401 (the fixture)

from verifier.errors import SpecError
from verifier.ops import BUNDLED, OPS, get_op, register
from verifier.spec import CallableKernel, Invariant, Op, Tensor, dtypes

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "your_own_op" / "ops_spec.py"


def amax_ref(inputs, params):
    return {"y": inputs["x"].abs().amax(dim=-1)}




def cli(*args, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "verifier.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("kwargs, words", [
    (dict(inputs={"y": "MxN"}, outputs={"z": "M"}), "has no input 'x'"),
    (dict(inputs={"x": "N"}, outputs={"y": "M"}), "input 'x' has shape"),
    (dict(inputs={"x": "M by N"}, outputs={"y": "M"}), "is not dims joined by 'x'"),
    (dict(inputs={"x": "MxN", "s": "MxG"}, outputs={"y": "M"}), "dim 'G', which is neither M, N nor an int param"),
    (dict(inputs={"x": "MxN"}, outputs={"y": "N"}), "not one row per input row"),
    (dict(inputs={"x": "MxN"}, outputs={}), "has no outputs"),
    (dict(inputs={"x": "MxN", "i": Tensor("M", "indices")}, outputs={"y": "M"}), "has role 'indices'"),
    (dict(inputs={"x": "MxN"}, outputs={"y": "M"}, reference=None), "no reference"),
    (dict(inputs={"x": "MxN"}, outputs={"y": "M"}, recipe={"y": (1.0, "mine")}), "not outputs or kappas"),
    (dict(inputs={"x": "MxN"}, outputs={"y": "M"}, invariants=[lambda *a: []]), "must be Invariant"),
])
def test_malformed_ops_are_spec_errors_with_a_fix(kwargs, words):
    kwargs.setdefault("reference", amax_ref)
    with pytest.raises(SpecError) as e:
        Op("mine", **kwargs)
    assert words in e.value.message and e.value.fix


def test_param_dims_roles_and_dtypes():
    op = Op("grouped", inputs={"x": "MxN", "s": Tensor("MxG", "scale"), "i": Tensor("M", "index", dtype="int32")},
            outputs={"y": "MxG"}, params={"G": 4}, reference=lambda i, p: {"y": i["s"]})
    assert op.shape_of("s", 3, 8) == (3, 4) and op.shape_of("y", 3, 8, {"G": 2}) == (3, 2)
    assert op.input_dtype("s", dtypes("bf16")) == "float32" and op.input_dtype("i", dtypes("bf16")) == "int32"
    assert op.signature() == "x[M,N], s[M,G] (scale), i[M] (index) -> y[M,G]" and op.derived


def test_a_kernel_registers_its_op_and_names_it(registry):
    op = Op("my_row_amax", inputs={"x": "MxN"}, outputs={"y": "M"}, reference=amax_ref)
    k = CallableKernel(name="k", op=op, fn=lambda i, o, p, d: None, dtypes=[dtypes("f32")])
    assert k.op == "my_row_amax" and get_op("my_row_amax") is op
    CallableKernel(name="k2", op=op, fn=lambda i, o, p, d: None, dtypes=[dtypes("f32")])  # the same op again: fine
    with pytest.raises(SpecError, match="already declared"):
        register(Op("my_row_amax", inputs={"x": "MxN"}, outputs={"y": "M"}, reference=amax_ref))
    with pytest.raises(SpecError, match="already declared"):
        register(Op("softmax", inputs={"x": "MxN"}, outputs={"y": "MxN"}, reference=amax_ref))


def test_bundled_ops_are_declared_with_the_public_op():
    assert all(isinstance(op, Op) for op in BUNDLED) and all(OPS[op.name] is op for op in BUNDLED)
    assert get_op("cross_entropy").input_dtype("labels", dtypes("bf16"), {"label_dtype": "int32"}) == "int32"


def test_reference_function_errors_blame_the_op(registry):
    from references import reference

    register(Op("bad_keys", inputs={"x": "MxN"}, outputs={"y": "M"}, reference=lambda i, p: {"z": i["x"][:, 0]}))
    register(Op("bad_shape", inputs={"x": "MxN"}, outputs={"y": "M"}, reference=lambda i, p: {"y": i["x"]}))
    register(Op("raises", inputs={"x": "MxN"}, outputs={"y": "M"}, reference=lambda i, p: 1 / 0))
    x = {"x": np.ones((2, 3), dtype=np.float32)}
    for name, words in (("bad_keys", "returned ['z']"), ("bad_shape", "of shape (2, 3), expected (2,)"),
                        ("raises", "raised ZeroDivisionError")):
        with pytest.raises(SpecError, match=words.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
            reference(name, x, {}, "float32")


def test_an_ops_supports_that_raises_blames_the_op():
    """A supports of the kernel's signature (M, N, p) on an Op (N, params) raised TypeError out of the check: an
    internal error (exit 3) instead of the kernel's spec error."""
    op = Op("gated", inputs={"x": "MxN"}, outputs={"y": "MxN"}, reference=lambda i, p: {"y": i["x"]},
            supports=lambda M, N, p: None)
    with pytest.raises(SpecError, match=r"op 'gated': its supports\(N, params\) raised TypeError") as e:
        op.refusal(8)
    assert "lambda N, params" in e.value.fix


def test_declared_invariants_flag_rows(registry):
    from verifier.judge.invariants import check

    op = register(Op("unit", inputs={"x": "MxN"}, outputs={"y": "MxN"}, reference=lambda i, p: {"y": i["x"]},
                     invariants=[Invariant("sum", measure=lambda i, o, p: np.abs(o["y"].sum(-1) - i["x"].sum(-1)),
                                           bound=lambda i, o, p, c: 8 * c.N * 2.0 ** -24, what="sum kept")]))
    x = np.ones((3, 4), dtype=np.float32)
    y = x.copy()
    y[1, 2] = 2.0
    (v,) = check(op.name, {"x": x}, {"y": y}, dtypes("f32"))
    assert v.invariant == "unit.sum" and list(v.rows) == [1]


def test_worked_example_callables_on_the_cpu(tmp_path):
    r = cli("check", str(EXAMPLE), "--kernel", "*-torch", "--kernel", "bug-amax-half-row",
            "--kernel", "bug-l2norm-bf16-sum", "--level", "quick", "--format", "json", "--output", str(tmp_path / "r.json"))
    assert r.returncode == 1, r.stderr
    import json

    doc = json.loads((tmp_path / "r.json").read_text())
    verdicts = {k["name"]: k["verdict"] for k in doc["kernels"]}
    assert verdicts == {"my-amax-torch": "pass", "my-l2norm-torch": "pass", "bug-amax-half-row": "fail",
                        "bug-l2norm-bf16-sum": "fail"}, verdicts
    checks = {(k["name"], f["check"]) for k in doc["kernels"] for f in k["findings"]}
    assert ("bug-amax-half-row", "value") in checks and ("bug-l2norm-bf16-sum", "value") in checks


def test_worked_example_cuda_build_and_lint_on_any_machine():
    r = cli("lint", str(EXAMPLE), "--kernel", "my-*-cuda", "--kernel", "bug-amax-cuda-nosync")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "shared-race" in r.stdout and "bug-amax-cuda-nosync" in r.stdout and "my-amax-cuda" not in \
        r.stdout.split("shared-race")[0].split("\n")[-1]


def test_verifier_ops_lists_user_ops_beside_bundled_ones():
    r = cli("ops", str(EXAMPLE))
    assert r.returncode == 0, r.stderr
    for line in ("softmax: x[M,N] -> y[M,N]", "my_row_amax: x[M,N] -> y[M]", "my_l2norm: x[M,N] -> y[M,N]",
                 "params: eps=1e-12; budget: derived from the reference; invariants: 1"):
        assert line in r.stdout
    r = cli("cases", "my_row_amax", "--spec", str(EXAMPLE))
    assert r.returncode == 0 and "d7_below_warp" in r.stdout
    r = cli("cases", "my_row_amax")
    assert r.returncode == 2 and "declare your own Op" in r.stderr


def test_outputs_in_their_own_dtype_quantized_scale_and_indices(tmp_path):
    """An fp8 output with a float32 per-row scale, and int64 indices compared exactly: the correct callables pass,
    a quantizer off by a factor of 2 and an argmax that skips the last column fail on their values."""
    spec = ROOT / "tests" / "data" / "user_ops_quant_spec.py"
    r = cli("check", str(spec), "--level", "quick", "--format", "json", "--output", str(tmp_path / "r.json"))
    assert r.returncode == 1, r.stderr
    import json

    doc = json.loads((tmp_path / "r.json").read_text())
    verdicts = {k["name"]: k["verdict"] for k in doc["kernels"]}
    assert verdicts == {"ptq": "pass", "ptq-half": "fail", "argmax": "pass", "argmax-bug": "fail"}, verdicts
    bad = [f for k in doc["kernels"] if k["name"] == "argmax-bug" for f in k["findings"]]
    assert bad and all(f["check"] == "value" for f in bad) and "allowed 0" in bad[0]["message"]
    r = cli("ops", str(spec))
    assert "user_token_quant: x[M,N] -> y[M,N], scale[M] (float32)" in r.stdout
    assert "user_row_argmax: x[M,N] -> i[M] (int64)" in r.stdout


def test_output_dtypes_are_validated():
    with pytest.raises(SpecError, match="integer outputs are int32 or int64"):
        Op("q", inputs={"x": "MxN"}, outputs={"y": Tensor("M", dtype="int8")}, reference=amax_ref)
    with pytest.raises(SpecError, match="declares role"):
        Op("q", inputs={"x": "MxN"}, outputs={"y": Tensor("M", role="weight")}, reference=amax_ref)


def _causal_mask(rng, x, params, policy):
    M, N = x.shape
    return np.where(np.arange(N)[None, :] > np.arange(M)[:, None] + params["offset"], -np.inf, 0.0)


def test_an_input_with_its_own_maker_a_masked_softmax(registry):
    """An additive mask drawn by the op's maker (-inf above the causal diagonal): a kernel that ignores the mask
    fails, one that applies it passes, under the derived budget."""
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    op = Op("masked_softmax", inputs={"x": "MxN", "mask": Tensor("MxN", make=_causal_mask)}, outputs={"y": "MxN"},
            params={"offset": 0}, reference=lambda i, p: {"y": torch.softmax(i["x"] + i["mask"], -1)}, exp_family=True)

    def good(i, o, p, dt):
        o["y"].copy_(torch.softmax(i["x"].float() + i["mask"].float(), -1))

    def unmasked(i, o, p, dt):
        o["y"].copy_(torch.softmax(i["x"].float(), -1))

    opts = Options(device="cpu", level="quick")
    reports = {name: check_kernel(CallableKernel(name=name, op=op, fn=fn, dtypes=[dtypes("f32")]), opts)
               for name, fn in (("good", good), ("unmasked", unmasked))}
    assert reports["good"].verdict == "pass", reports["good"].findings
    assert reports["unmasked"].verdict == "fail" and any(f.check == "value" for f in reports["unmasked"].findings)

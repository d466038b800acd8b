"""Masks as Megatron's fused softmax kernels apply them (production-kernel validation, issue #37): a boolean mask
filled, not added (mask_mode='fill': a NaN logit under the mask is never read), a fully masked row filled with a
finite value (masked_rows='uniform': softmax of equal logits, 1/N), and square causal blocks whose query length is
the row length (q_len='N', scaled_upper_triang_masked_softmax). Our own minimal torch kernels reproduce each."""
import numpy as np
import pytest
import torch

from verifier.errors import SpecError
from verifier.judge import Criteria, judge
from verifier.ops import OPS, variant_for
from verifier.spec import CallableKernel, dtypes

FILL = {"mask": "MxN", "mask_mode": "fill", "scale": 0.5}


def _inputs(M=6, N=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, N)).astype(np.float32)
    mask = np.where(rng.random((M, N)) < 0.3, -np.inf, 0).astype(np.float32)
    mask[:, 0] = 0
    mask[2] = -np.inf  # a fully masked row
    x[1, np.flatnonzero(mask[1])[:1]] = np.nan if np.isneginf(mask[1]).any() else x[1, 0]
    x[3, 5], mask[3, 5] = np.nan, -np.inf  # a NaN under the mask
    return {"x": x, "mask": mask}


def _filled(xs, scale, dead="uniform", op=torch.softmax):
    """Megatron's arithmetic: masked logits replaced by -10000, softmax; 'zeros': its later scale_value."""
    masked = torch.tensor(xs["mask"]) != 0
    z = torch.where(masked, torch.tensor(-10000.0), torch.tensor(xs["x"]) * scale)
    y = op(z, -1)
    if dead == "zeros":  # its criterion: the row's max is the fill
        y = torch.where(z.amax(-1, keepdim=True) == -10000.0, 0.0, y)
    return y.numpy()


def _judge(xs, y, op="softmax", **params):
    name = variant_for(op, params)
    return judge(Criteria(op=name, dtypes=dtypes("f32"), params={**OPS[name].params, **params}), xs, {"y": y})


@pytest.mark.parametrize("declared,dead,ok", [("uniform", "uniform", True), ("zeros", "zeros", True),
                                              ("zeros", "uniform", False), ("uniform", "zeros", False),
                                              ("nan", "uniform", False)])
def test_a_filled_mask_and_its_masked_rows(declared, dead, ok):
    xs = _inputs()
    v = _judge(xs, _filled(xs, 0.5, dead), **FILL, masked_rows=declared)
    assert v.ok == ok, v


def test_undeclared_uniform_rows_pass_with_a_warning_naming_it():
    xs = _inputs()
    v = _judge(xs, _filled(xs, 0.5), **FILL)
    assert v.ok and "masked_rows='uniform'" in v.undeclared[0]


def test_a_nan_under_an_added_mask_propagates():
    """mask_mode='add' (the default, PyTorch's float attn_mask): NaN + -inf is NaN, so the filled kernel, which
    drops the NaN under its mask, is wrong there; 'fill' says it is right."""
    xs = _inputs()
    y = _filled(xs, 0.5)
    assert not _judge(xs, y, mask="MxN", scale=0.5, masked_rows="uniform").ok
    assert np.isfinite(y[3]).all() and _judge(xs, y, **FILL, masked_rows="uniform").ok


def test_log_softmax_uniform_rows_are_minus_log_n():
    """log_softmax keeps -inf under the mask (a finite fill would show there); a dead row is -log N."""
    xs = _inputs()
    masked = torch.tensor(xs["mask"]) != 0
    y = torch.log_softmax(torch.where(masked, -float("inf"), torch.tensor(xs["x"]) * 0.5), -1)
    y = torch.where(masked.all(-1, keepdim=True), -float(np.log(8)), y).numpy()
    assert _judge(xs, y, "log_softmax", **FILL, masked_rows="uniform").ok
    assert not _judge(xs, y, "log_softmax", **FILL, masked_rows="zeros").ok


def test_an_unknown_mask_mode_says_which_are_known():
    with pytest.raises(SpecError, match="mask_mode"):
        _judge(_inputs(), _filled(_inputs(), 0.5), **{**FILL, "mask_mode": "bool"})


def _upper_triang(inputs, outputs, params, dt):
    """Square causal blocks: row r is query r mod N, keeps columns 0..r mod N, writes 0 past the diagonal."""
    x = inputs["x"]
    M, N = x.shape
    keep = torch.arange(N)[None, :] <= (torch.arange(M) % N)[:, None]
    return {"y": torch.softmax(torch.where(keep, x.float() * params["scale"], -float("inf")), -1).to(x.dtype)}


def test_square_causal_blocks_q_len_n():
    from verifier.ops.softmax_inputs import causal_masked

    assert (~causal_masked(6, 3, {"causal": True, "q_len": "N"})).sum(1).tolist() == [1, 2, 3, 1, 2, 3]
    x = np.random.default_rng(1).standard_normal((12, 4)).astype(np.float32)
    y = _upper_triang({"x": torch.tensor(x)}, {}, {"scale": 0.5}, None)["y"].numpy()
    assert _judge({"x": x}, y, causal=True, q_len="N", scale=0.5, masked_rows="nan").ok
    assert not _judge({"x": x}, y, causal=True, scale=0.5, masked_rows="nan").ok  # q_len 0: row r is query r


@pytest.mark.parametrize("declared,dead,verdict", [("zeros", "zeros", "pass"), ("uniform", "uniform", "pass"),
                                                   ("uniform", "zeros", "fail"), ("zeros", "uniform", "fail")])
def test_rows_of_minus_inf_logits_are_held_to_the_declared_contract(declared, dead, verdict):
    """The catalogue's fully_masked_rows (x itself -inf on some rows, a random mask): such a row has no live logit.
    'uniform' (Megatron's -10000 fill) puts its mass on the masked logits, the only finite ones; 'zeros' writes 0.
    The budget of those rows once followed the -inf logits' error (infinite) and let any finite output pass."""
    from verifier.battery.values import run_case
    from verifier.inputs.cases import cases_for
    from verifier.results.options import Options, derived_seed

    def kernel(inputs, outputs, params, dt):
        xs = {k: inputs[k].numpy() for k in ("x", "mask")}
        return {"y": torch.tensor(_filled(xs, params["scale"], dead))}

    k = CallableKernel(name=f"megatron-like-{declared}-{dead}", op="softmax", fn=kernel, dtypes=[dtypes("f32")],
                       params={**FILL, "masked_rows": declared}, device="cpu")
    dt = k.dtypes[0]
    case = next(c for c in cases_for(k, dt, "quick") if c.name == "fully_masked_rows")
    xs = case.make(np.random.default_rng(derived_seed(0, k.name, dt.tag, case.name)), dt, k.op, k.op_params())
    assert np.isneginf(xs["x"]).all(axis=1).any()
    report = run_case(k, dt, case.name, xs, Options(level="quick", device="cpu"))
    errors = {f.check for f in report.findings if f.severity == "error"}
    assert errors == set() if verdict == "pass" else "value" in errors, report.findings

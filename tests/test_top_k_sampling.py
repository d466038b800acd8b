"""Sampling's top-k filters (ops top_k_renorm_probs, top_k_mask_logits; verifier/ops/top_k_sampling.py) and their
tie-aware judge (verifier/judge/kept.py): every tie at the k-th largest kept (ties='keep_all', FlashInfer's and
``x >= topk(x, k).values[:, -1:]``) or exactly k (declared ties='exactly_k'); k >= N keeps the row; a NaN counts as
the largest and is the kernel's to keep or drop; renorm by max(sum, sum_floor). The defect twins are caught on the
inputs that expose them, and the sort-then-cut kernel that declares exactly_k passes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from verifier.errors import SpecError
from verifier.judge import check_output
from verifier.spec import dtypes

ROOT = Path(__file__).resolve().parent.parent
F32 = dtypes("f32")
NEG_INF = float("-inf")


def _tied(seed=0, M=6, N=32):
    return (np.random.default_rng(seed).integers(0, 4, size=(M, N)) * 0.5).astype(np.float32)


def _keep_all(x, k):
    t = torch.topk(torch.as_tensor(x), k).values[:, -1:]
    return torch.as_tensor(x) >= t


def _mask(x, keep):
    return torch.where(keep, torch.as_tensor(x), NEG_INF).numpy()


def _scatter(x, k):
    v, i = torch.topk(torch.as_tensor(x), k)
    return torch.full_like(torch.as_tensor(x), NEG_INF).scatter(1, i, v).numpy()


def _check(op, x, y, **params):
    return check_output(op, {"x": x}, y, F32, params=params)


def test_keep_all_accepts_every_tie_kept_and_names_the_dropped_tie():
    x = _tied()
    assert _check("top_k_mask_logits", x, _mask(x, _keep_all(x, 5)), k=5).ok
    cmp = _check("top_k_mask_logits", x, _scatter(x, 5), k=5)  # exactly 5: ties cut by torch.topk
    assert not cmp.ok
    assert "tied with the k-th largest, dropped" in cmp.tensors[0].message()
    assert "ties': 'exactly_k'" in cmp.tensors[0].message()


def test_exactly_k_accepts_any_tie_cut_and_rejects_a_wrong_count():
    x = _tied()
    assert _check("top_k_mask_logits", x, _scatter(x, 5), k=5, ties="exactly_k").ok
    flipped = x[:, ::-1].copy()  # another tie-break: torch.topk on the reversed row, mapped back
    assert _check("top_k_mask_logits", x, _scatter(flipped, 5)[:, ::-1].copy(), k=5, ties="exactly_k").ok
    cmp = _check("top_k_mask_logits", x, _mask(x, _keep_all(x, 5)), k=5, ties="exactly_k")
    assert not cmp.ok and "ties='exactly_k' keeps" in cmp.tensors[0].message()


def test_an_element_below_the_kth_kept_or_above_it_dropped_is_a_finding():
    x = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
    assert _check("top_k_mask_logits", x, _mask(x, _keep_all(x, 8)), k=8).ok
    extra = _mask(x, _keep_all(x, 9))  # k + 1 kept
    assert "below the k-th largest" in _check("top_k_mask_logits", x, extra, k=8).tensors[0].message()
    short = _mask(x, _keep_all(x, 7))  # the k-th itself dropped
    assert "tied with the k-th largest, dropped" in _check("top_k_mask_logits", x, short, k=8).tensors[0].message()
    top_dropped = _mask(x, _keep_all(x, 8) & (torch.as_tensor(x) < torch.as_tensor(x).max(1, keepdim=True).values))
    assert "above the k-th largest" in _check("top_k_mask_logits", x, top_dropped, k=8).tensors[0].message()


def test_renorm_divides_by_the_kept_sum_not_the_row_sum():
    p = np.random.default_rng(2).random((4, 64)).astype(np.float32)
    p /= p.sum(1, keepdims=True)
    keep = _keep_all(p, 8)
    kept = torch.where(keep, torch.as_tensor(p, dtype=torch.float64), 0.0)
    right = (kept / kept.sum(-1, keepdim=True)).float().numpy()
    assert _check("top_k_renorm_probs", p, right, k=8).ok
    over_row = (kept / torch.as_tensor(p, dtype=torch.float64).sum(-1, keepdim=True)).float().numpy()
    cmp = _check("top_k_renorm_probs", p, over_row, k=8)
    assert not cmp.ok and cmp.tensors[0].ok and not cmp.tensors[1].ok  # the kept set is right, the values not


def test_sum_floor_turns_an_all_zero_row_into_zeros_and_without_it_nan():
    p = np.zeros((2, 16), dtype=np.float32)
    p[1, :3] = [0.5, 0.25, 0.25]
    zeros_row = np.zeros_like(p)
    zeros_row[1, :3] = [0.5, 0.25, 0.25]
    assert _check("top_k_renorm_probs", p, zeros_row, k=4, sum_floor=1e-8).ok
    assert not _check("top_k_renorm_probs", p, zeros_row, k=4).ok  # the torch composition: 0 / 0 = NaN
    nan_row = zeros_row.copy()
    nan_row[0] = np.nan
    assert _check("top_k_renorm_probs", p, nan_row, k=4).ok


def test_k_at_least_n_keeps_the_row_and_neg_inf_logits_are_no_picks():
    x = np.random.default_rng(3).standard_normal((3, 6)).astype(np.float32)
    x[0, 2] = np.nan
    assert _check("top_k_mask_logits", x, x.copy(), k=8).ok  # copied, NaN included
    assert not _check("top_k_mask_logits", x, _mask(x, _keep_all(np.nan_to_num(x, nan=-1e9), 5)), k=8).ok
    y = np.full((2, 16), NEG_INF, dtype=np.float32)
    y[:, :3] = 1.0  # three finite logits, k = 8: the k-th largest is -inf, every element kept
    assert _check("top_k_mask_logits", y, y.copy(), k=8).ok


def test_a_nan_takes_a_slot_and_is_the_kernels_to_keep_or_drop():
    x = np.random.default_rng(4).standard_normal((4, 32)).astype(np.float32)
    x[:, 5] = np.nan
    keep = _keep_all(x, 8)  # torch.topk ranks NaN first: 7 numbers above the threshold
    dropped = _mask(x, keep & ~torch.isnan(torch.as_tensor(x)))
    kept = _mask(x, keep)
    assert _check("top_k_mask_logits", x, dropped, k=8).ok and _check("top_k_mask_logits", x, kept, k=8).ok
    nan_smallest = _mask(x, _keep_all(np.nan_to_num(x, nan=-1e9), 8))  # 8 numbers: one too many
    assert not _check("top_k_mask_logits", x, nan_smallest, k=8).ok


def test_bad_params_are_spec_errors_naming_the_fix():
    x = _tied()
    with pytest.raises(SpecError, match="k >= 1"):
        _check("top_k_mask_logits", x, x, k=0)
    with pytest.raises(SpecError, match="exactly_k"):
        _check("top_k_mask_logits", x, x, k=2, ties="some")


def _check_kernel(path, name, case):
    from verifier.battery import check_kernel
    from verifier.declare.registry import load_spec_file
    from verifier.results.options import Options

    spec = {k.name: k for k in load_spec_file(path)}[name]
    return check_kernel(spec, Options(level="ci", device="cpu", case=case))


DEFECTS = ROOT / "kernels" / "defects" / "triton" / "defects.py"


@pytest.mark.parametrize("name,case,cls", [
    ("defect-triton-top-k-mask-sort-cut", "topk_mask_tied", "value"),
    ("defect-triton-top-k-renorm-no-floor", "zero_rows", "nan-inf"),
    ("defect-triton-top-k-mask-nan-smallest", "some_nan", "value"),
])
def test_defect_twins_are_caught_on_their_inputs(name, case, cls):
    report = _check_kernel(DEFECTS, name, case)
    assert report.verdict == "fail" and cls in {f.check for f in report.findings}, report.findings


@pytest.mark.parametrize("path,name,case", [
    (DEFECTS, "triton-top-k-mask-sort-cut-exactly-k", "topk_mask_tied"),
    (ROOT / "kernels" / "triton" / "top_k_sampling_spec.py", "triton-top-k-mask-logits", "topk_mask_tied"),
    (ROOT / "kernels" / "triton" / "top_k_sampling_spec.py", "triton-top-k-renorm-probs-floor", "topk_renorm_zeros"),
])
def test_correct_kernels_pass_the_tie_and_zero_cases(path, name, case):
    report = _check_kernel(path, name, case)
    assert report.verdict == "pass", [f.message for f in report.findings]


def test_flashinfer_topk_spec_declares_both_filters_and_skips_without_its_headers():
    from verifier.declare.registry import load_spec_file

    kernels = load_spec_file(ROOT / "kernels" / "third_party" / "flashinfer" / "sampling_topk_spec.py")
    assert {k.op for k in kernels} == {"top_k_renorm_probs", "top_k_mask_logits"}
    for k in kernels:
        assert k.op_params()["ties"] == "keep_all"
        why = k.unavailable()
        assert why is None or "pip install flashinfer-python==0.7.4 --no-deps" in why


def test_the_kept_sums_bound_counts_the_kept_terms_not_the_row():
    """The derived bound of a sum (verifier/ops/error_rules.py) counts the terms that are not exact zeros: 50 kept
    of 1000 round as a 50-term sum, so a renorm 100 ULPs off is a finding (gamma(999) would allow ~1000 ULPs), while
    a reciprocal one ULP off then a multiply (FlashInfer's rcp.approx) passes."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal((16, 1000)) * 2
    p = np.exp(z - z.max(1, keepdims=True))
    p = (p / p.sum(1, keepdims=True)).astype(np.float32)
    keep = p >= -np.sort(-p, 1)[:, 49:50]
    s = np.where(keep, p, 0).astype(np.float32).sum(1, dtype=np.float32)
    r = np.float32(1) / s
    params = {"k": 50, "sum_floor": 0.0}
    rcp = np.where(keep, p * np.nextafter(r, np.float32(np.inf))[:, None], 0).astype(np.float32)
    assert check_output("top_k_renorm_probs", {"x": p}, rcp, F32, "fast", params).ok
    off = np.where(keep, p * (r * np.float32(1 + 100 * 2.0**-24))[:, None], 0).astype(np.float32)
    assert not check_output("top_k_renorm_probs", {"x": p}, off, F32, "fast", params).ok

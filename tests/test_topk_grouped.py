"""Grouped MoE routing on topk_softmax (n_group / topk_group / group_score: DeepSeek-V2's max, V3's top-2 sum):
the group stage is tie-aware (verifier.judge.group_choice) and never judges a pick against the union of every group
choice. Our own minimal torch compositions, each with one production mistake."""
import numpy as np
import pytest
import torch

from verifier.errors import SpecError
from verifier.inputs.catalogue import catalogue
from verifier.judge import Criteria, judge
from verifier.ops import OPS, variant_for
from verifier.spec import dtypes

V3 = {"k": 8, "gate": "sigmoid", "bias": True, "renormalize": True, "scaling": 2.5, "sorted": False, "n_group": 8,
      "topk_group": 4}
V2 = {"k": 6, "gate": "softmax", "renormalize": False, "sorted": False, "n_group": 8, "topk_group": 3}


def _route(xs, p, group_score=None, fill=-np.inf, groups=True, mix=None):
    """The torch composition (vLLM's grouped_topk); ``mix``: replace the picks with a given [M, k] index array."""
    x = torch.tensor(xs["x"], dtype=torch.float32)
    g = torch.sigmoid(x) if p["gate"] == "sigmoid" else torch.softmax(x, -1)
    c = g + torch.tensor(xs["bias"]) if "bias" in xs else g
    M, E = c.shape
    v = c.view(M, p["n_group"], -1)
    how = group_score or ("top2" if "bias" in xs else "max")
    gs = {"top2": lambda: v.topk(2, -1)[0].sum(-1), "max": lambda: v.amax(-1), "all": lambda: v.sum(-1)}[how]()
    keep = torch.zeros_like(gs).scatter(1, gs.topk(p["topk_group"], -1)[1], 1.0).bool()
    kept = keep.repeat_interleave(E // p["n_group"], -1)
    idx = (c.masked_fill(~kept, fill) if groups else c).topk(p["k"], -1, sorted=False)[1]
    if mix is not None:
        idx = torch.tensor(mix)
    w = g.gather(1, idx)
    if p.get("renormalize"):
        w = w / w.sum(-1, keepdim=True)
    return {"values": (w * p.get("scaling", 1.0)).numpy(), "indices": idx.int().numpy()}


def _judge(xs, ys, p):
    name = variant_for("topk_softmax", p)
    return judge(Criteria(op=name, dtypes=dtypes("f32"), params={**OPS[name].params, **p}), xs, ys)


def _case(name, p, seed=1):
    op = variant_for("topk_softmax", p)
    case = next(c for c in catalogue(op, dtypes("f32"), "ci") if c.name == name)
    return case.make(np.random.default_rng(seed), dtypes("f32"), op, p)


def _bad(v):
    return sorted({t.name for t in v.comparison.tensors if not t.ok})


@pytest.mark.parametrize("p", [V3, V2], ids=["v3", "v2"])
def test_the_torch_composition_passes_every_grouped_case(p):
    for name in ("topk_grouped_tied_groups", "topk_grouped_lone_best", "topk_e256_deepseek", "topk_e256_exact_ties",
                 "topk_all_equal") + (("topk_grouped_negative_choice",) if "bias" in p else ()):
        xs = _case(name, p)
        assert _judge(xs, _route(xs, p), p).ok, name


def test_any_one_of_tied_groups_may_be_kept_but_picks_never_mix_them():
    """Three groups tie exactly at the topk_group boundary: keeping any one is right (each a different pick set),
    picks from two of them at once are consistent with no group choice, though each is within the band of the
    union."""
    p = V3
    xs = _case("topk_grouped_tied_groups", p)
    G = 32
    ref = _route(xs, p)
    for r in range(xs["x"].shape[0]):
        row = xs["x"][r]
        tied = [g for g in range(8) if np.isclose(row[g * G:(g + 1) * G].max(), 2.95)]
        assert len(tied) == 3
    # every choice of the tied group: the two picks of the tied group swapped for another's
    for choose in range(3):
        picks = ref["indices"].astype(np.int64).copy()
        for r in range(picks.shape[0]):
            row = xs["x"][r]
            tied = [g for g in range(8) if np.isclose(row[g * G:(g + 1) * G].max(), 2.95)]
            in_tied = [i for i in range(8) if picks[r, i] // G in tied]
            top2 = tied[choose] * G + np.argsort(-row[tied[choose] * G:(tied[choose] + 1) * G])[:2]
            picks[r, in_tied] = top2
        assert _judge(xs, _route(xs, p, mix=picks), p).ok, choose
    mixed = ref["indices"].astype(np.int64).copy()
    for r in range(mixed.shape[0]):
        row = xs["x"][r]
        tied = [g for g in range(8) if np.isclose(row[g * G:(g + 1) * G].max(), 2.95)]
        in_tied = [i for i in range(8) if mixed[r, i] // G in tied]
        a = tied[0] * G + int(np.argmax(row[tied[0] * G:(tied[0] + 1) * G]))
        b = tied[1] * G + int(np.argmax(row[tied[1] * G:(tied[1] + 1) * G]))
        mixed[r, in_tied] = [a, b]  # both 2.95s: each alone within the band, together no group choice
    v = _judge(xs, _route(xs, p, mix=mixed), p)
    assert _bad(v) == ["indices"]
    assert "which no right group choice keeps" in v.comparison.tensors[1].message()


@pytest.mark.parametrize("mistake,case", [
    ({"groups": False}, "topk_grouped_lone_best"),  # plain top-k: the global top expert's group lost
    ({"group_score": "max"}, "topk_grouped_lone_best"),  # V2's group score on a V3 router
    ({"group_score": "all"}, "topk_e256_deepseek"),  # every expert summed, not the top 2
    ({"fill": 0.0}, "topk_grouped_negative_choice"),  # dropped groups filled with 0, not -inf
])
def test_each_grouped_routing_mistake_is_caught(mistake, case):
    xs = _case(case, V3)
    assert _judge(xs, _route(xs, V3), V3).ok
    assert _bad(_judge(xs, _route(xs, V3, **mistake), V3)) == ["indices"]


def test_max_group_score_keeps_the_lone_best_group():
    """group_score='max' (V2's rule) keeps the lone best expert's group; a top-2-sum router drops it (sigmoid gates:
    0.98 + 0.05 < 0.95 + 0.95; softmax gates of these logits would keep it under both)."""
    p = {**V2, "gate": "sigmoid"}
    xs = _case("topk_grouped_lone_best", p)
    assert _judge(xs, _route(xs, p), p).ok
    assert _bad(_judge(xs, _route(xs, p, group_score="top2"), p)) == ["indices"]


def test_nan_and_neg_inf_rows():
    """A NaN row leaves the choice free (range, distinctness still hold); -inf logits give gates of 0 (sigmoid):
    ties across groups, any right choice passes."""
    xs = _case("topk_e256_deepseek", V3)
    xs["x"][0, 5] = np.nan
    xs["x"][1, :200] = -np.inf
    ys = _route(xs, V3)
    ys["indices"][0] = np.arange(8)[::-1]  # any distinct picks in a NaN row
    ys["values"][0] = np.nan
    assert _judge(xs, ys, V3).ok
    ys["indices"][0, 1] = ys["indices"][0, 0]
    assert _bad(_judge(xs, ys, V3)) == ["indices"]


def test_grouping_params_are_checked():
    assert OPS["topk_softmax"].params["n_group"] == 1  # no grouping: the op as before
    with pytest.raises(SpecError, match="topk_group"):
        _judge(_case("topk_e256_deepseek", V3), {}, {**V3, "topk_group": None})
    with pytest.raises(SpecError, match="group_score"):
        _judge(_case("topk_e256_deepseek", V3), {}, {**V3, "group_score": "mean"})
    op = OPS[variant_for("topk_softmax", V3)]
    assert "do not split" in op.refusal(60, V3)
    assert "k=9 is more than" in op.refusal(16, {**V3, "k": 9})  # 4 kept groups of 2
    assert "no top 2" in op.refusal(8, {**V3, "k": 4})
    assert op.refusal(256, V3) is None


def test_grouped_defect_twins_are_caught_and_the_torch_twin_passes():
    """kernels/defects/callable/defects.py: each grouped-routing defect fails at 'ci' on the input its entry names;
    the torch composition (its twin) passes."""
    import importlib.util
    from pathlib import Path

    from verifier.battery import check_kernel
    from verifier.results.options import Options

    path = Path(__file__).resolve().parents[1] / "kernels" / "defects" / "callable" / "defects.py"
    spec = importlib.util.spec_from_file_location("callable_defects", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for k in mod.GROUPED_KERNELS:
        report = check_kernel(k, Options(level="ci", device="cpu"))
        entry = mod.DEFECTS.get(k.name)
        if entry is None:
            assert report.verdict == "pass", (k.name, report.findings)
            continue
        assert report.verdict == "fail", k.name
        assert any(f.check == entry["caught_by"] and f.input == entry["exposing_input"] for f in report.findings), \
            (k.name, [(f.check, f.input) for f in report.findings])


def test_v2_masking_dropped_groups_with_zero_picks_outside_them():
    """SGLang's older grouped_topk (softmax, max, dropped groups filled with 0.0): where the kept groups hold fewer
    than k finite logits, a dropped expert (filled 0.0) ties the kept zero gates and is picked, weight 0 though its
    gate is not: a pick outside every right group choice."""
    xs = _case("topk_neg_inf_gates", V2, seed=0)
    assert _judge(xs, _route(xs, V2), V2).ok
    v = _judge(xs, _route(xs, V2, fill=0.0), V2)
    assert "indices" in _bad(v) and "which no right group choice keeps" in v.comparison.tensors[1].message()


@pytest.mark.parametrize("gap,ok", [(2 ** -22, True), (1e-3, False)])
def test_near_tied_groups_within_the_band_may_fall_either_way(gap, ok):
    """Two groups at the topk_group boundary whose top-2 sums differ by a float32 rounding (a logit 2^-22 apart):
    a kernel keeping the lower one is right; 1e-3 apart (far outside the derived band) it is wrong."""
    rng = np.random.default_rng(5)
    x = (-3.0 - rng.random((4, 64))).astype(np.float32)
    for r in range(4):  # groups of 8: 0..2 high, 3 and 4 near-tied at the boundary of topk_group = 4
        for g, top in ((0, (3.0, 2.9)), (1, (2.95, 2.85)), (2, (2.9, 2.8)), (3, (2.5, 2.0)), (4, (2.5, 2.0 - gap))):
            x[r, g * 8:g * 8 + 2] = top
    xs = {"x": x, "bias": np.zeros(64, dtype=np.float32)}
    p = {**V3, "k": 8}
    assert _judge(xs, _route(xs, p), p).ok
    lower = {"x": x.copy(), "bias": xs["bias"]}
    lower["x"][:, 4 * 8 + 1] = 2.0 + gap  # the kernel's view: group 4 above group 3, its picks there
    picks = _route(lower, p)["indices"].astype(np.int64)
    assert (picks // 8 == 4).any() and not (picks // 8 == 3).any()
    v = _judge(xs, _route(xs, p, mix=picks), p)  # values: the true gates at those picks
    assert v.ok == ok and _bad(v) == ([] if ok else ["indices"])

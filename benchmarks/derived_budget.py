"""The derived budget (verifier.ops.derived: forward error bounds through a torch reference) next to the hand-derived
one of every bundled op, on the op's adversarial catalogue at level ci, no GPU needed.

Each bundled op is declared again as a user would (tests/derived_twins.py: a float64 torch reference, no recipe), and
for every case and dtype both budgets are evaluated on the same input. Per element, the excess over the output
rounding (budget - 1 ULP) of the derived budget is divided by that of the hand one, on the elements where the hand
budget is informative (more than 1e-3 and under 2^p ULPs, p the output's significand bits: past that both are
vacuous). Printed per op and dtype: the median of the per-case medians, the smallest and largest ratio seen and where.
Then the verdicts: a correct float32 evaluation, the same expression evaluated in bfloat16 arithmetic, and outputs
5% too large, each judged under both budgets; a row counts the cases where the two verdicts differ.

    python benchmarks/derived_budget.py [--ops softmax,rmsnorm] [--dtypes f32,bf16] [--max-n 4096]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from derived_twins import REFERENCES, twin  # noqa: E402

from verifier import dtypes as _dt  # noqa: E402
from verifier.inputs.catalogue import catalogue  # noqa: E402
from verifier.judge import tolerance as T  # noqa: E402
from verifier.judge.compare import compare  # noqa: E402
from verifier.ops import OPS, register  # noqa: E402
from verifier.spec import dtypes  # noqa: E402


def cases(name: str, dt, max_n: int):
    for case in catalogue(name, dt):
        if case.layout.kind == "contiguous" and case.N <= max_n:
            yield case, case.make(np.random.default_rng(0), dt, name, {})


def ratios(name: str, dt, xs, online: bool):
    """Per output, derived / hand excess ULPs on the informative elements (empty when none)."""
    from references import reference

    ref = reference(name, xs, {}, dt.output)
    p = dict(OPS[name].params)
    hand = T.budget(name, dt, "precise", xs, ref, p, online=online)
    mine = T.budget(f"derived_{name}", dt, "precise", xs, ref, p, online=online)
    cap = 2.0 ** (_dt.finfo(dt.output).nmant + 1)
    out = {}
    for t in hand:
        h, d = hand[t] - 1, mine[t] - 1
        keep = (h > 1e-3) & (h < cap) & np.isfinite(h)
        out[t] = d[keep] / h[keep]
    return ref, hand, mine, out


def outputs(name: str, xs: dict, dt, how: str) -> dict:
    """The op's outputs as a kernel computing the reference expression would give them: in float32 ('f32'), in
    bfloat16 arithmetic ('bf16-arith'), or 5% too large ('big5')."""
    import torch

    work = torch.bfloat16 if how == "bf16-arith" else torch.float32
    tin = {k: torch.as_tensor(np.asarray(v).astype(np.int64)) if np.asarray(v).dtype.kind in "iu"
           else torch.as_tensor(np.asarray(v, dtype=np.float32)).to(work) for k, v in xs.items()}
    got = REFERENCES[name](tin, dict(OPS[name].params))
    scale = 1.05 if how == "big5" else 1.0
    return {k: _round(v.double().numpy() * scale, dt.output) for k, v in got.items()}


def _round(v, dtype):
    from verifier.numerics.ulp import round_to

    with np.errstate(all="ignore"):
        return round_to(v, dtype)


def verdicts(name, dt, xs, ref, hand, mine) -> dict:
    """{how: (hand ok, derived ok)} for the three outputs."""
    res = {}
    for how in ("f32", "bf16-arith", "big5"):
        ys = outputs(name, xs, dt, how)
        res[how] = (compare(ys, ref, hand, dt.output).ok, compare(ys, ref, mine, dt.output).ok)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", default=",".join(REFERENCES))
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--max-n", type=int, default=200_000)
    a = ap.parse_args(argv)
    print(f"{'op':22s} {'dtype':5s} {'cases':>5s} {'median':>7s} {'min':>9s} {'max':>9s}  verdicts differ "
          "(f32 / bf16-arith / big5)")
    for name in a.ops.split(","):
        register(twin(name))
        for tag in a.dtypes.split(","):
            dt = dtypes(tag)
            med, lo, hi, differ = [], (np.inf, ""), (0.0, ""), {"f32": 0, "bf16-arith": 0, "big5": 0}
            n = 0
            for case, xs in cases(name, dt, a.max_n):
                ref, hand, mine, rs = ratios(name, dt, xs, online=name == "online_softmax_stats")
                n += 1
                for r in rs.values():
                    if r.size:
                        med.append(float(np.median(r)))
                        lo = min(lo, (float(r.min()), case.name))
                        hi = max(hi, (float(r.max()), case.name))
                for how, (h, d) in verdicts(name, dt, xs, ref, hand, mine).items():
                    differ[how] += h != d
            print(f"{name:22s} {tag:5s} {n:5d} {np.median(med):7.2f} {lo[0]:9.3g} {hi[0]:9.3g}  "
                  f"{differ['f32']} / {differ['bf16-arith']} / {differ['big5']}   (min at {lo[1]}, max at {hi[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""var_mean: x[M,N] -> var[M], mean[M], torch.var_mean(x, dim=-1, correction=c): var = Σ(x - mean)²/(N - c);
param ``correction`` 1 (torch's default, Bessel's) or 0 (the population variance). N - c <= 0 (one element with
correction 1) gives NaN as torch does (0/0).

Budget: layernorm's statistics model (verifier.ops.layernorm.k_layernorm's dmu and dvar): the mean errs by
gamma(N + 1)·mean|x|; the variance, two-pass or Welford, by dmu² + gamma(N + 3)·(var + dmu²) + gamma(N)·std·
sqrt(var + mean²) (Chan, Golub & LeVeque 1983), scaled by N/(N - c) and one more rounding for the division. On a
mean >> std row that is about ulp(mean)·... relative to var·(mean/std): condition aware, while the textbook
E[x²] - E[x]² (error ~ N·u·mean²) exceeds it. Then the output rounding, 1 ULP each.
"""
from __future__ import annotations

import warnings

import numpy as np

from verifier.numerics.errmodel import gamma
from verifier.numerics.violations import ulp_out
from verifier.ops.group_norm import ulp_bumps
from verifier.ops.model import Invariant, Op, OpCase


def reference(inputs, params):
    import torch  # here, not at import: a CUDA check child never loads torch
    with warnings.catch_warnings():  # N <= correction: NaN, as promised; torch also warns
        warnings.filterwarnings("ignore", "var_mean\\(\\): degrees of freedom")
        var, mean = torch.var_mean(inputs["x"], dim=-1, correction=int(params["correction"]))
    return {"var": var, "mean": mean}


def stats_errors(x, c):
    """(mean, population variance, dmu, dvar) per row, (M, 1): the error bounds of a kernel's two-pass or Welford
    statistics in the accumulation dtype (as verifier.ops.layernorm.k_layernorm)."""
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    mean_abs = np.mean(np.abs(x), axis=-1, keepdims=True)
    dmu = gamma(c.N + 1 + c.c_in, c.u) * mean_abs + c.eta
    with np.errstate(divide="ignore", invalid="ignore"):
        welford = gamma(c.N, c.u) * np.sqrt(var) * np.sqrt(var + mu * mu)
    dvar = dmu * dmu + gamma(c.N + 3 + 2 * c.c_in, c.u) * (var + dmu * dmu) + welford + c.N * c.eta
    return mu, var, dmu, dvar


def k_mean(x, y, p, c, xs):
    return stats_errors(x, c)[2][:, 0]


def k_var(x, y, p, c, xs):
    n = c.N - int(p["correction"])
    dvar = stats_errors(x, c)[3][:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, dvar * c.N / max(n, 1) + c.u * np.abs(y) + c.eta, 0.0)


def _finite_rows(i, p=None):
    """Rows a finite var and mean are promised for: finite inputs, and N - correction > 0 (else NaN, as torch)."""
    ok = np.isfinite(i["x"]).all(axis=1)
    return ok if p is None else ok & (i["x"].shape[1] - int(p["correction"]) > 0)


INVARIANTS = [
    Invariant("var_nonnegative", measure=lambda i, o, p: np.where(_finite_rows(i, p), np.maximum(-o["var"], 0.0), 0.0),
              bound=lambda i, o, p, c: np.where(_finite_rows(i, p), 0.0, np.inf),
              what="var >= 0 (value = -var)"),
    Invariant("mean_in_range", measure=lambda i, o, p: np.where(_finite_rows(i), np.maximum(np.maximum(
        i["x"].min(axis=1) - o["mean"], o["mean"] - i["x"].max(axis=1)), 0.0), 0.0),
              bound=lambda i, o, p, c: np.where(_finite_rows(i), gamma(i["x"].shape[1] + 1, c.u)
                                                * np.abs(i["x"]).mean(axis=1) + c.eta + ulp_out(o["mean"], c),
                                                np.inf),
              what="min(x) <= mean <= max(x) (value = distance outside)"),
]


def _mean_gg_std(rng):
    """U[1000 - 1/64, 1000 + 1/64] in float32 (std ~ 0.01, mean/std ~ 1e5): E[x²] - E[x]² in fp32 loses every bit."""
    def fn(shape, dtype):
        from verifier.numerics.ulp import round_to
        return round_to(rng.uniform(1000 - 1 / 64, 1000 + 1 / 64, shape), dtype).astype(np.float64)
    return fn


def _holds_1000(dt):
    return dt in ("float32", "float16", "bfloat16", "float64")


CASES = (
    OpCase("vm_cancel_ulp_bumps", "rows of 1000 with one or two elements 1-3 ULPs above per 64 columns (issue #36, "
           "exact in bf16/f16): the variance is a few ULPs², E[x²] - E[x]² loses it", 4, 512, ulp_bumps,
           dtype_ok=_holds_1000, quick=True),
    OpCase("vm_mean_gg_std_1e5", "1000 ± 1/64 (mean/std ~ 1e5 in f32): the one-pass variance is rounding noise",
           4, 1024, _mean_gg_std, dtype_ok=lambda dt: dt in ("float32", "float64")),
)

OPDEF = Op(
    "var_mean", inputs={"x": "MxN"}, outputs={"var": "M", "mean": "M"}, params={"correction": 1},
    reference=reference, recipe={"var": (1.0, "var"), "mean": (1.0, "mean")},
    kappas={"var": k_var, "mean": k_mean}, invariants=INVARIANTS, cases=CASES,
    description="torch.var_mean(x, dim=-1, correction=c)",
)

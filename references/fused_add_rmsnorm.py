"""fused_add_rmsnorm: r = x + residual; residual_out = r; y = rmsnorm(r) * (offset + w)  (vLLM's
fused_add_rms_norm; offset = 1 is the Gemma form).

Which r feeds y (decided here, as vLLM does it): vLLM adds in fp32, stores the sum rounded to the residual
(= input) dtype, and normalises the unrounded fp32 sum. The reference uses the EXACT sum r for y, and the
exact sum correctly rounded to the residual dtype for 'residual' (references.reference takes
``residual_dtype``, default the dtype of the residual input). A kernel that normalises the *rounded*
residual instead differs from this by up to half an ulp of the input dtype per element before the
normalisation; the tolerance has to cover that if such kernels are to pass.

float64: r is x + residual in float64 with its exact rounding error from TwoSum (usually 0: two values
of <= 24 bits whose exponents differ by <= 29 add exactly), so 'residual' has bound |error|; y is
rmsnorm's computation on the float64 sum with that error carried (see references/rmsnorm.py).
"""
from __future__ import annotations

import mpmath
import numpy as np

from references import rmsnorm
from references._common import as_f64, mpf_rows, rows_of


def _two_sum(a: np.ndarray, b: np.ndarray):
    with np.errstate(all="ignore"):
        s = a + b
        bb = s - a
        err = (a - (s - bb)) + (b - bb)
    finite = np.isfinite(a) & np.isfinite(b)
    # non-finite inputs: IEEE value is the semantics (exact); finite inputs that overflowed: untrusted
    err = np.where(finite, np.where(np.isfinite(s), err, np.inf), 0.0)
    return s, np.abs(err)


def float64(inputs: dict, params: dict):
    """(values, bounds): {'y', 'residual'} in float64 and their absolute error bounds."""
    x = as_f64(inputs["x"])
    res = as_f64(inputs["residual"])
    w, w_rel = rmsnorm.weights(inputs, params)
    r, r_err = _two_sum(x, res)
    y, yb = rmsnorm.core(r, np.where(np.isfinite(r_err), r_err, 0.0), w, float(params["eps"]), sq_exact=False,
                         w_rel=w_rel)
    yb = np.where(np.all(np.isfinite(r_err), axis=1)[:, None], yb, np.inf)
    return {"y": y, "residual": r}, {"y": yb, "residual": r_err}


def mp(inputs: dict, params: dict, rows=None, dps: int = 60) -> dict:
    """{'y', 'residual'}: object arrays [len(rows), N] of mpf; 'residual' is the exact sum."""
    x = as_f64(inputs["x"])
    res = as_f64(inputs["residual"])
    M, N = x.shape
    rows = rows_of(rows, M)
    sums = [[mpmath.fadd(a, b, exact=True) for a, b in zip(xa, ra)]
            for xa, ra in zip(mpf_rows(x, rows), mpf_rows(res, rows))]
    ys = np.empty((len(rows), N), dtype=object)
    rs = np.empty((len(rows), N), dtype=object)
    with mpmath.workdps(dps):
        w = rmsnorm.mp_weights(inputs, params)
        for i, yr in enumerate(rmsnorm.mp_rows(sums, w, mpmath.mpf(float(params["eps"])), N)):
            ys[i] = yr
            rs[i] = sums[i]
    return {"y": ys, "residual": rs}

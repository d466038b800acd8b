"""logsumexp: lse = m + log(sum exp(z - m)) per row of the softmax family's logits z (with the sink), in the declared
base; a row with no finite lse as ``lse_nonfinite`` says (NaN while undeclared). The float64 value and its bound are
softmax's lse output's (references/softmax.py ``with_lse``), mpmath its ``mp_lse``."""
from __future__ import annotations

from references._common import as_f64, rows_of
from references.softmax import mp_lse, with_lse


def float64(inputs: dict, params: dict):
    """(values, bounds): {'lse': [M]}, {'lse': absolute error bound}."""
    values, bounds = {}, {}
    with_lse(values, bounds, inputs, {**params, "lse": True})
    return values, bounds


def mp(inputs: dict, params: dict, rows=None, dps: int = 60) -> dict:
    """{'lse': object array [len(rows)] of mpf} evaluated at ``dps`` digits."""
    import mpmath

    x = as_f64(inputs["x"])
    with mpmath.workdps(dps):
        return {"lse": mp_lse(inputs, params, rows_of(rows, x.shape[0]))}

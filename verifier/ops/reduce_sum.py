"""reduce_sum: x[M,N] -> y[M], the row sum (float, or exact int32 of int8/int32 inputs)."""
from __future__ import annotations

import numpy as np

from verifier import dtypes as _dt
from verifier.numerics.errmodel import gamma
from verifier.numerics.violations import U64, f64, finite_violation, ulp_out, violation
from verifier.ops.model import Op
from verifier.ops.online_softmax_stats import k_exact


def k_sum(x, y, p, c, xs):
    # any order: |error| <= gamma(N-1)·sum|x_j| (Higham, eq. 4.4); flushed subnormal inputs add eta each.
    return gamma(c.N - 1 + c.c_in, c.u) * np.sum(np.abs(x), axis=-1) + c.N * c.eta


def check_sum(x_raw, y, c):
    """|y - sum(x)| <= gamma(N - 1)·sum|x| (any order, Higham eq. 4.4) + N·eta (flushed subnormals)
    + the output rounding ulp_out(y) (0 when accumulating and storing integers: exact)."""
    N = x_raw.shape[1]
    if x_raw.dtype.kind in "iu":
        xi = x_raw.astype(np.int64)
        exact, absum = xi.sum(axis=1).astype(np.float64), np.abs(xi).sum(axis=1).astype(np.float64)
        fin = np.ones(len(y), dtype=bool)
        f64_err = 0.0
    else:
        x = f64(x_raw)
        fin = np.isfinite(x).all(axis=1)
        xs = np.where(fin[:, None], x, 0.0)
        exact, absum = xs.sum(axis=1), np.abs(xs).sum(axis=1)
        f64_err = N * U64 * absum
    int_exact = not _dt.is_float(c.out) and c.u == 0.0
    out_rounding = 0.0 if int_exact else ulp_out(y, c)
    # a sum beyond the output range must overflow (compare's job); skip those rows here
    fmax = float(_dt.finfo(c.out).max) if _dt.is_float(c.out) else float(np.iinfo(_dt.numpy_dtype(c.out)).max)
    ok = fin & (np.abs(exact) <= fmax)
    out = finite_violation("reduce_sum.finite", ok, y[:, None])
    ok &= np.isfinite(y)
    with np.errstate(invalid="ignore"):
        bound = gamma(N - 1, c.u) * absum + N * c.eta + out_rounding + f64_err
        dev = np.abs(y - exact)
    out += violation("reduce_sum.sum", ok & ~(dev <= bound), dev, bound,
                     "|y - sum(x)| <= gamma(N-1)·sum|x| + ulp_out(y) (value = |y - sum(x)|)")
    return out


OPDEF = Op(
    "reduce_sum", inputs={"x": "MxN"}, outputs={"y": "M"}, reference="references.reduce_sum",
    recipe={"y": (1.0, "sum")}, kappas={"sum": k_sum, "exact": k_exact},
    # Sums accumulated in a 16-bit float (half2 / bf162 arithmetic; fp8 inputs summed in f16): the
    # same any-order sum bound, with u of the accumulation dtype. Integer sums (int8 or int32 in,
    # int32 out, int32 accumulation) are exact in any mode.
    extra_tolerances=(("float16", "float16", None), ("bfloat16", "bfloat16", None),
                      ("int32", "int32", {"y": (0.0, "exact")})),
    invariants=lambda x_raw, inp, ys, p, dt, c: check_sum(x_raw, ys["y"], c),
)

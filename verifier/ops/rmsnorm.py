"""rmsnorm: x[M,N], w[N] -> y[M,N], y = x·(offset + w) / sqrt(mean(x²) + eps); params eps=1e-6, offset=0
(offset=1: the Gemma form, weights stored as w - 1; the kernel's offset + w costs one rounding in acc).

Also the normalizations' shared pieces (the error of 1/rms, the seminorm comparison), used by
fused_add_rmsnorm and layernorm.
"""
from __future__ import annotations

import numpy as np

from verifier.numerics.errmodel import gamma, mul
from verifier.numerics.violations import U64, finite_violation, inv1m, ulp_out, violation
from verifier.ops.model import Op, Tensor

# --------------------------------------------------------------------------- error budget (tolerance)

def rms_units(h, eps, c, k_h):
    """Relative error units of r = 1/sqrt(mean(h²) + eps) for elements with k_h units of error each.

    mean(h²) + eps: squares 1 + 2·k_h, any-order sum N-1, scaling by 1/N 2 (1/N rounded, product),
    adding eps 1 and eps rounded to acc 1; errors are relative to mean(h²) <= mean(h²) + eps.
    Underflowed squares cost N·eta of the sum, eta of the mean. rsqrt halves the relative error of
    its argument and adds its own.
    """
    ms = np.mean(h * h, axis=-1, keepdims=True)
    v_units = (c.N - 1) + 1 + 2 * k_h + 2 + 2
    with np.errstate(divide="ignore", invalid="ignore"):
        v_rel = gamma(v_units, c.u) + c.eta / (ms + eps)
    return v_rel / 2 / c.u + c.intr.rsqrt


def underflow_abs(r, w, c):
    """The absolute error of y = h·r·w where a product underflows: an intermediate below the smallest normal holds
    eta/2 absolutely (eta its spacing there, or the smallest normal where the math mode flushes), scaled by the
    factor applied after it, r or |w| in whichever order the kernel multiplies (ONNX Runtime's skip layer norm
    takes h·w first: on rows of subnormals, r = 1/sqrt(eps), its output erred by 199 ULP where eta alone allowed
    23, an H100 run on 2026-12-05). Beside the output's own rounding, eta once more."""
    with np.errstate(invalid="ignore", over="ignore"):
        return c.eta * (1.0 + 0.5 * np.maximum(np.abs(r), np.abs(w)))


def offset_units(p) -> float:
    """The rounding of offset + w in acc (y = x·r·(offset + w)): one unit of the weight factor, none without an
    offset."""
    return 1.0 if float(p.get("offset", 0.0)) else 0.0


def weights(inp, p):
    """offset + w in float64 (the invariants' weight factor)."""
    return inp["w"] + float(p.get("offset", 0.0))


def k_rmsnorm(x, y, p, c, xs):
    r_units = rms_units(x, p["eps"], c, c.c_in)
    # y = x·r·(offset + w): two products; x and w converted to acc; offset + w rounded once.
    return (mul(gamma(r_units + 2 + 2 * c.c_in + offset_units(p), c.u), np.abs(y))
            + underflow_abs(rstd_of(x, p["eps"]), weights(xs, p) if "w" in xs else 1.0, c))  # noweight: w = 1


def rstd_of(h, eps):
    """1/sqrt(mean(h²) + eps) per row, in float64 (the factor r of the budgets' underflow term)."""
    with np.errstate(divide="ignore"):
        return 1.0 / np.sqrt(np.mean(h * h, axis=-1, keepdims=True) + eps)


# --------------------------------------------------------------------------- invariants

def scale_violation(name, ok, z, a, e, g_s, J, what):
    """Compare a seminorm of z = (y - b)/w with that of the exact a, on the columns J (w != 0).

    Model: z_j = (1 + theta_s)·(a_j + e'_j) with |theta_s| <= g_s common to the row (the kernel's
    1/rms or 1/std) and |e'_j| <= e_j. A seminorm S (rms; or std, which ignores a common shift)
    obeys |S(a + e') - S(a)| <= rms(e'), hence (1 - g_s)(S(a) - E) <= S(z) <= (1 + g_s)(S(a) + E)
    with E = rms_J(e). The float64 arithmetic here adds N·2^-53 relatively.
    """
    nJ = np.maximum(J.sum(axis=1), 1)

    def rms(v):
        return np.sqrt(np.where(J, v * v, 0.0).sum(axis=1) / nJ)

    def std(v):
        mean = np.where(J, v, 0.0).sum(axis=1) / nJ
        return rms(v - mean[:, None])

    S = rms if what == "rms" else std
    with np.errstate(invalid="ignore", over="ignore"):
        Sz, Sa, E = S(z), S(a), rms(e)
        slack = z.shape[1] * 4 * U64 * (Sa + E)
        lo = np.maximum(1 - g_s, 0) * np.maximum(Sa - E, 0) - slack  # vacuous once g_s >= 1
        hi = (1 + g_s) * (Sa + E) + slack
        dev = np.abs(Sz - Sa)
        bound = np.maximum(hi - Sa, Sa - lo)
        bad = ok & ~((Sz >= lo) & (Sz <= hi))
    if what == "std":
        return violation(name, bad, dev, bound, "std((y - b)/w) == std of the exact normalized row, "
                         "sqrt(var/(var + eps)) (value = |std - expected|)")
    return violation(name, bad, dev, bound, "rms(y/w) == sqrt(ms/(ms + eps)) (value = |rms - expected|)")


def rms_gs(x, eps, c, k_h=0.0):
    """Relative error of the kernel's 1/sqrt(mean(h²) + eps): squares (1 + 2·k_h each for inputs
    already carrying k_h units), any-order sum N - 1, scaling by 1/N 2, adding eps and rounding eps
    2; underflow/flush costs N·eta of the sum. sqrt halves the relative error, rsqrt adds its own."""
    N = x.shape[1]
    ms = np.mean(x * x, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        v_rel = gamma(N - 1 + 1 + 2 * k_h + 4, c.u) + N * c.eta / (ms + eps)
    return ms, v_rel / 2 + c.intr.rsqrt * c.u


def check_rms(name, x, w, y, eps, c, k_h=0.0, h_abs=None, consistent=False, k_w=0.0):
    """y = x·w/sqrt(ms + eps), ms = mean(x²). On the columns J where w != 0 the exact
    a_j = x_j/sqrt(ms + eps) has rms = sqrt(ms_J/(ms + eps)) (= sqrt(ms/(ms + eps)) when no w is 0:
    the eps effect). Per element, z_j = y_j/w_j errs from (1 + theta_s)·a_j by: the two products
    x·r·w, gamma(2 + k_h) relatively; output rounding U_j/|w_j|; a flushed-to-zero input, eta/rms;
    and h_abs_j (an absolute uncertainty of x_j itself, e.g. the rounded residual)."""
    fin_in = np.isfinite(x).all(axis=1)
    out = finite_violation(f"{name}.finite", fin_in, y)
    ms, g_s = rms_gs(x, eps, c, k_h)
    ok = fin_in & np.isfinite(y).all(axis=1) & (ms > 0)  # all-zero rows: y = 0, compare's job
    J = np.broadcast_to(w != 0, x.shape)
    rho = np.sqrt(ms + eps)[:, None]
    wsafe = np.where(w != 0, np.abs(w), 1.0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        a = x / rho
        z = y / np.where(w != 0, w, 1.0)
        e = (np.abs(a) * gamma(2 + k_h + k_w, c.u) + (ulp_out(y, c) / wsafe + c.eta / rho) * inv1m(g_s)[:, None]
             + (0.0 if h_abs is None else h_abs / rho))
    out += scale_violation(f"{name}.rms", ok, z, a, e, g_s, J, "rms")
    if consistent:
        # Elementwise form of the same model: |z_j - a_j| <= g_s·|a_j| + (1 + g_s)·e_j. It ties y to
        # the stored residual element by element (an rms alone cannot see which row was normalized).
        with np.errstate(invalid="ignore", over="ignore"):
            lim = g_s[:, None] * np.abs(a) + (1 + g_s)[:, None] * e
            excess = np.where(J & ok[:, None], np.abs(z - a) - lim, -np.inf)
            j = np.argmax(excess, axis=1)[:, None]
            pick = lambda v: np.take_along_axis(v, j, 1)[:, 0]  # noqa: E731
            out += violation(f"{name}.consistent", pick(excess) > 0, pick(np.abs(z - a)), pick(lim),
                             "y == residual_out·w/rms(residual_out) per element (value = |y/w - h/rms(h)|)")
    return out


OPDEF = Op(
    "rmsnorm", inputs={"x": "MxN", "w": Tensor("N", "weight")}, outputs={"y": "MxN"}, params={"eps": 1e-6, "offset": 0.0},
    reference="references.rmsnorm",
    recipe={"y": (1.0, "rmsnorm")}, kappas={"rmsnorm": k_rmsnorm},
    invariants=lambda x_raw, inp, ys, p, dt, c: check_rms("rmsnorm", inp["x"], weights(inp, p), ys["y"], p["eps"], c,
                                                          k_w=offset_units(p)),
)

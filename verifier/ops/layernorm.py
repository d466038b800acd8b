"""layernorm: x[M,N], w[N], b[N] -> y[M,N], y = (x - mean)/sqrt(var + eps)·w + b; params eps=1e-5."""
from __future__ import annotations

import numpy as np

from verifier.numerics.errmodel import gamma
from verifier.numerics.violations import U64, finite_violation, inv1m, ulp_out, violation
from verifier.ops.model import Op, Tensor
from verifier.ops.rmsnorm import scale_violation, underflow_abs


def k_layernorm(x, y, p, c, xs):
    """y = (x - mean)·rstd·w + b, for two-pass or Welford statistics.

    mean: any-order sum plus scaling errs by dmu <= gamma(N+1)·mean|x|. Two-pass variance
    sum((x - mean_hat)²)/N = var + dmu² (the cross term cancels since sum(x - mean) = 0), plus
    gamma(N+3)·(var + dmu²) for the squares and the sum. Welford's updating algorithm errs by about
    N·kappa·u relatively, kappa = sqrt(1 + mean²/var) (Chan, Golub & LeVeque 1983, "Algorithms for
    computing the sample variance"): both bounds are added so either algorithm passes, while the
    textbook E[x²] - E[x]² (error ~ N·kappa²·u) does not. Then rstd errs by half the relative error
    of var + eps plus rsqrt's own. Element i: |w_i|·rstd·(dmu + u|x_i - mean|) from the centred
    value, (rel(rstd) + 2 products)·|y_i - b_i|, and u|y_i| for adding b.
    """
    w, b = xs["w"], xs["b"]
    eps = p["eps"]
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    mean_abs = np.mean(np.abs(x), axis=-1, keepdims=True)
    dmu = gamma(c.N + 1 + c.c_in, c.u) * mean_abs
    with np.errstate(divide="ignore", invalid="ignore"):
        welford = gamma(c.N, c.u) * np.sqrt(var) * np.sqrt(var + mu * mu)
    dvar = dmu * dmu + gamma(c.N + 3 + 2 * c.c_in, c.u) * (var + dmu * dmu) + welford
    dv = dvar + 2 * c.u * (var + eps)  # adding eps, eps rounded to acc
    with np.errstate(divide="ignore", invalid="ignore"):
        rstd = 1.0 / np.sqrt(var + eps)
        r_rel = 0.5 * dv / (var + eps) + c.intr.rsqrt * c.u
    centred = dmu * (1 + c.u) + c.u * np.abs(x - mu)
    return (np.abs(w) * rstd * centred
            + (r_rel + gamma(2 + 2 * c.c_in, c.u)) * np.abs(y - b)
            + c.u * (np.abs(y) + c.c_in * np.abs(b)) + underflow_abs(rstd, w, c))


def check_layernorm(x, w, b, y, eps, c):
    """y = (x - mu)/sqrt(var + eps)·w + b. With c_j = (x_j - mu)/s, s = sqrt(var + eps), and
    z_j = (y_j - b_j)/w_j on the columns w != 0:

    * the kernel's mean errs by dmu <= gamma(N + 1)·mean|x| (any-order sum and scaling), a shift
      Delta = dmu/s common to the row;
    * its variance errs relatively by gamma(N + 3)(1 + kappa) + Delta² with kappa = mean|x|/s:
      two-pass gives gamma(N + 3) plus dmu² (the cross term cancels), Welford's updating
      algorithm about N·kappa·u (Chan, Golub & LeVeque 1983); the textbook E[x²] - E[x]² errs by
      ~N·kappa²·u and fails. Adding eps and rounding it: 2u. 1/s then errs by g_s = half of that
      plus the rsqrt intrinsic;
    * per element: subtraction, product by 1/s and by w, gamma(3)·(|c_j| + Delta); adding b
      rounds once more, u·|y_j|; output rounding U_j; both divided by |w_j|.

    Mean: |mean(z) - mean(c)| <= g_s·|mean(c)| + (1 + g_s)(Delta + mean(e)). Variance: std is a
    seminorm that ignores the common shift Delta, see scale_violation. Constant rows have
    var = 0: c = 0 exactly, so mean(z) ~ 0 and var(z) ~ 0 within the same bounds.
    """
    N = x.shape[1]
    fin_in = np.isfinite(x).all(axis=1)
    out = finite_violation("layernorm.finite", fin_in, y)
    ok = fin_in & np.isfinite(y).all(axis=1)
    xs = np.where(ok[:, None], x, 0.0)
    mu = xs.mean(axis=1, keepdims=True)
    var = ((xs - mu) ** 2).mean(axis=1, keepdims=True)
    s = np.sqrt(var + eps)
    cj = (xs - mu) / s
    mean_abs = np.abs(xs).mean(axis=1, keepdims=True)
    delta = gamma(N + 1, c.u) * mean_abs / s + N * c.eta / s
    kappa = mean_abs / s
    g_var = gamma(N + 3, c.u) * (1 + kappa) + delta * delta + 2 * c.u
    g_s = (g_var / 2 + c.intr.rsqrt * c.u)[:, 0]
    J = np.broadcast_to(w != 0, x.shape)
    wsafe = np.where(w != 0, np.abs(w), 1.0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        z = (y - b) / np.where(w != 0, w, 1.0)
        e = (gamma(3, c.u) * (np.abs(cj) + delta)
             + (ulp_out(y, c) + c.u * np.abs(y) + c.eta) / wsafe * inv1m(g_s)[:, None])
    nJ = np.maximum(J.sum(axis=1), 1)
    mz = np.where(J, z, 0.0).sum(axis=1) / nJ
    mc = np.where(J, cj, 0.0).sum(axis=1) / nJ
    me = np.where(J, e, 0.0).sum(axis=1) / nJ
    with np.errstate(invalid="ignore"):
        bound = g_s * np.abs(mc) + (1 + g_s) * (delta[:, 0] + me) + N * 4 * U64 * (1 + np.abs(mc))
        dev = np.abs(mz - mc)
    out += violation("layernorm.mean", ok & ~(dev <= bound), dev, bound,
                     "mean((y - b)/w) == 0 (value = |mean - expected|)")
    # The std check's E must also cover Delta·gamma(3) (inside e) but not Delta itself.
    out += scale_violation("layernorm.var", ok, z, cj, e, g_s, J, "std")
    return out


OPDEF = Op(
    "layernorm", inputs={"x": "MxN", "w": Tensor("N", "weight"), "b": Tensor("N", "bias")}, outputs={"y": "MxN"},
    params={"eps": 1e-5}, reference="references.layernorm",
    recipe={"y": (1.0, "layernorm")}, kappas={"layernorm": k_layernorm},
    invariants=lambda x_raw, inp, ys, p, dt, c: check_layernorm(inp["x"], inp["w"], inp["b"], ys["y"], p["eps"], c),
)

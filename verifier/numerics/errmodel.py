"""The rounding model shared by the error budgets (tolerance) and the invariants.

* u = unit roundoff of the accumulation dtype; k roundings compound to gamma(k) = k·u / (1 - k·u)
  (Higham, Accuracy and Stability of Numerical Algorithms, Lemma 3.1).
* ``Intrinsics``: the error bounds of the math functions of one math mode, in units of u_acc.
* ``Ctx``: everything an op's error formula or invariant needs besides the tensors.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import UsageError

MATH_MODES = ("precise", "fast", "triton_approx")


def _cr(ulps_from_correctly_rounded: float) -> float:
    """A bound of c ulps from the correctly rounded result is c + 1/2 ulps from the exact value,
    i.e. a relative error of at most (2c + 1)·u (one ulp of v is at most 2u|v|)."""
    return 2.0 * ulps_from_correctly_rounded + 1.0


@dataclass(frozen=True)
class Intrinsics:
    """Error bounds of the math functions a math mode uses, relative to the exact value, in units
    of u_acc (so a correctly rounded operation is 1).

    exp: exp(t) at t = 0; exp_arg: extra relative error per unit |t| (argument-dependent part).
    log_abs / log_rel: absolute error of log(s) is (log_abs + log_rel·|log s|)·u.
    flush: subnormal results flushed to zero (underflow costs up to the smallest normal) rather
    than gradual underflow (up to the smallest subnormal).
    """

    exp: float
    exp_arg: float
    div: float
    rsqrt: float
    log_abs: float
    log_rel: float
    flush: bool
    source: str


# fp32 bounds. Sources: CUDA C++ Programming Guide, "Mathematical Functions" appendix (single
# precision standard functions and intrinsics tables); PTX ISA 9.x, sections 9.7.3.8 (div),
# 9.7.3.15 (sqrt), 9.7.3.16 (rsqrt), 9.7.3.20 (lg2), 9.7.3.21 (ex2).
F32 = {
    # expf 2 ulp; x/y IEEE (-prec-div=true); rsqrtf 2 ulp >= 1/sqrtf(x) with sqrtf correctly
    # rounded (-prec-sqrt=true) = 2 roundings; logf 1 ulp; subnormals kept (-ftz=false).
    "precise": Intrinsics(exp=_cr(2), exp_arg=0.0, div=_cr(0), rsqrt=max(_cr(2), 2 * _cr(0)),
                          log_abs=0.0, log_rel=_cr(1), flush=False,
                          source="CUDA guide: expf 2 ulp, x/y 0 ulp, sqrtf 0 ulp, rsqrtf 2 ulp, logf 1 ulp"),
    # -use_fast_math: __expf 2 + floor(|1.173 x|) ulp; __fdividef / div.approx 2 ulp; rsqrtf 2 ulp or
    # sqrt.approx (rel 2^-23 = 2u) then div.approx (2 ulp); __logf 2^-21.41 absolute on [0.5, 2],
    # else 3 ulp; -ftz=true.
    "fast": Intrinsics(exp=_cr(2), exp_arg=2 * 1.173, div=_cr(2), rsqrt=max(_cr(2), 2.0 + _cr(2)),
                       log_abs=2.0 ** (-21.41 + 24), log_rel=_cr(3), flush=True,
                       source="CUDA guide intrinsics: __expf 2+floor(|1.173x|) ulp, __fdividef 2 ulp, "
                              "__logf 2^-21.41 abs on [0.5,2] else 3 ulp; PTX sqrt.approx rel 2^-23"),
    # Triton (NVIDIA): tl.exp on fp32 is ex2.approx.f32(x * f32(log2 e)): ex2.approx 2 ulp from the
    # correctly rounded 2^t over the full range; rounding log2(e) and the product perturbs t by
    # 2u|t|, i.e. exp(x) by 2u|x| relatively. Division '/' is div.full.f32 (2 ulp); rsqrt is
    # libdevice rsqrtf (2 ulp) or sqrt.approx + div.full; log via lg2.approx (2^-22 absolute on
    # (0.5, 2), else relative 2^-22) times ln 2 (two more roundings), or libdevice logf (1 ulp).
    # Flush-to-zero assumed (the worse case).
    "triton_approx": Intrinsics(exp=_cr(2), exp_arg=2.0, div=_cr(2), rsqrt=max(_cr(2), 2.0 + _cr(2)),
                                log_abs=2.0 ** (-22 + 24) * math.log(2), log_rel=max(4.0 + 2.0, _cr(1)),
                                flush=True,
                                source="PTX ISA: ex2.approx.f32 2 ulp, div.full.f32 2 ulp, lg2.approx.f32 "
                                       "2^-22; Triton lowers fp32 exp to ex2.approx.f32(x*log2e)"),
}
# fp64: CUDA guide double-precision table: exp 1 ulp, x/y IEEE, rsqrt 1 ulp, log 1 ulp.
F64_PRECISE = Intrinsics(exp=_cr(1), exp_arg=0.0, div=_cr(0), rsqrt=max(_cr(1), 2 * _cr(0)),
                         log_abs=0.0, log_rel=_cr(1), flush=False,
                         source="CUDA guide (double): exp 1 ulp, x/y 0 ulp, rsqrt 1 ulp, log 1 ulp")

INTRINSICS: dict[tuple[str, str], Intrinsics] = {
    **{("float32", mode): i for mode, i in F32.items()},
    ("float64", "precise"): F64_PRECISE,
}


@dataclass(frozen=True)
class Ctx:
    """The rounding context of one check. Budgets fill c_in, u_res and N; invariants out and inp."""

    u: float  # unit roundoff of the accumulation dtype (0 for integer accumulation: exact)
    eta: float  # worst underflow error of one operation (smallest normal if flushed, else subnormal)
    intr: Intrinsics
    online: bool  # the kernel rescales running sums (online softmax): add the rescale roundings
    c_in: float = 0.0  # 1 when the input dtype is not exactly representable in the accumulation dtype
    u_res: float = 0.0  # unit roundoff of the dtype the residual is stored in (fused_add_rmsnorm)
    N: int = 0
    out: str = "float32"
    inp: str = "float32"
    out_ulps: float = 1.0  # the output rounding the kernel declares (tolerance base_ulps): invariants allow as much


def gamma(k, u):
    """k·u / (1 - k·u), infinite once k·u >= 1."""
    ku = np.asarray(k, dtype=np.float64) * u
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ku < 1, ku / (1 - ku), np.inf)


def fits_in(v: float, u: float) -> bool:
    """v has at most the significand bits of the dtype of unit roundoff u (2^-24: float32; range aside): a
    constant the kernel converts to its accumulation dtype exactly."""
    return u > 0 and float(np.ldexp(np.frexp(v)[0], round(-math.log2(u)))) % 1 == 0


def worst_intrinsics(acc: str) -> Intrinsics:
    table = [v for (a, _), v in INTRINSICS.items() if a == acc] or [v for (a, _), v in INTRINSICS.items()
                                                                     if a == "float32"]
    return Intrinsics(
        exp=max(i.exp for i in table), exp_arg=max(i.exp_arg for i in table), div=max(i.div for i in table),
        rsqrt=max(i.rsqrt for i in table), log_abs=max(i.log_abs for i in table),
        log_rel=max(i.log_rel for i in table), flush=True, source="worst of all math modes")


def invariant_ctx(dtypes, math_mode, online, out_ulps: float = 1.0) -> Ctx:
    """The context of the invariants: ``math_mode`` None (unknown) takes the worst mode, so a correct
    kernel is never rejected for using approximate intrinsics; eta is always the smallest normal. ``out_ulps``:
    the output rounding a kernel declares (``tolerance={"base_ulps": 2}``: it rounds twice at the output), which
    every invariant's per-element output term then allows too."""
    acc = dtypes.acc
    if math_mode is None:
        intr = worst_intrinsics(acc)
    elif math_mode not in MATH_MODES:
        raise UsageError(f"unknown math mode {math_mode!r}", fix=f"use one of {', '.join(MATH_MODES)} or None")
    else:
        # The constants are in units of u_acc; accumulation dtypes without their own row (fp16/bf16
        # accumulation) reuse the fp32 row of the mode: the intrinsics are evaluated in fp32 anyway.
        intr = INTRINSICS.get((acc, math_mode)) or INTRINSICS.get(("float32", math_mode)) or worst_intrinsics(acc)
    if _dt.is_float(acc):
        fi = _dt.finfo(acc)
        u, eta = _dt.unit_roundoff(acc), float(fi.smallest_normal)
    else:
        u, eta = 0.0, 0.0
    return Ctx(u=u, eta=eta, intr=intr, online=True if online is None else bool(online),
               out=dtypes.output, inp=dtypes.input, out_ulps=max(1.0, float(out_ulps)))


def mul(g, v):
    """g·v with 0 where v is 0 (an exactly-zero output, e.g. exp(-inf), has no error even if g is inf)."""
    with np.errstate(invalid="ignore"):
        return np.where(v == 0, 0.0, g * v)

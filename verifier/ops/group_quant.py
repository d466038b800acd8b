"""per_token_group_quant: dynamic quantization with one scale per group of ``group_size`` consecutive elements of a
row (docs/specs.md, "Per-token-group quantization").

x[M,N] -> y[M,N] quantized, scale[M, N/group_size] float32: for each group g of row m, scale[m, g] =
max(amax(|x[m, g·G : (g+1)·G]|), floor) / qmax and y = saturate(round(x / scale[m, g])). It is vLLM's and SGLang's
``per_token_group_quant_fp8`` / ``_int8`` (DeepSeek-style block quantization of activations, G = 128 by default);
group_size = N is per_token_quant. Rows whose N is not a multiple of group_size are outside the op (``supports``).
A kernel writing the scales column-major ([N/G, M] transposed, TMA-aligned) copies them into scale in its launcher.
``ue8m0=True``: the scale is rounded up to a power of two, 2^ceil(log2(max(amax, floor) / qmax)) (vLLM's
``use_ue8m0``, SGLang's ``scale_ue8m0``: DeepGEMM's UE8M0 scale format), stored as a float32.
``ue8m0="floor"``: OCP MX's shared exponent, 2^(floor(log2(max(amax, floor))) - floor(log2(qmax))) (torchao's MX
FLOOR mode): x / scale may pass qmax there and saturates. Either way the exponent is an E8M0 one, at least -127.
The budget and the judging are per_token_quant's (verifier.ops.quant), per group: y is judged under the kernel's
own scale on the groups whose scale is within budget.
"""
from __future__ import annotations

import numpy as np

from verifier.errors import SpecError
from verifier.ops.model import Invariant, Op, OpCase, Quantized, Tensor
from verifier.ops.quant import PTQ_CASES, QUANT_OUT, check_bounds, k_ptq_y, k_scale, nonzero, ptq_rescale


E8M0_MIN_EXP = -127  # E8M0's smallest scale is 2^-127 (its byte 0); a zero group gets it


def ue8m0_mode(p):
    """None (float32 scales), "ceil" (``ue8m0=True``: DeepGEMM's, 2^ceil(log2(max(amax, floor) / qmax))) or "floor"
    (OCP MX: 2^(floor(log2(max(amax, floor))) - floor(log2(qmax))))."""
    mode = p.get("ue8m0", False)
    if mode is False or mode is None:
        return None
    if mode is True or mode == "ceil":
        return "ceil"
    if mode == "floor":
        return "floor"
    raise SpecError(f"param ue8m0={mode!r} is not False, True ('ceil') or 'floor'",
                    fix="ue8m0=True for scales rounded up to a power of two (DeepGEMM), ue8m0='floor' for OCP MX's "
                        "floor(log2(amax)) - emax exponent (torchao's FLOOR mode)")


def _emax(p) -> int:
    """The floor mode's exponent offset: the largest power of two within qmax (8 for e4m3's 448, 15 for e5m2)."""
    import math

    return math.floor(math.log2(float(p["qmax"])))


def ptgq_reference(i, p):
    check_bounds(p)
    x = i["x"]
    M, N = x.shape
    xg = x.reshape(M, N // p["group_size"], p["group_size"])
    amax = xg.abs().amax(-1)
    scale = amax.clamp(min=p["floor"]) / p["qmax"]
    mode = ue8m0_mode(p)
    if mode is not None:  # power-of-two scales: DeepGEMM's round up (x / scale never passes qmax), or OCP MX's floor
        import torch

        if mode == "ceil":
            e = torch.ceil(torch.log2(scale))
        else:
            e = torch.floor(torch.log2(amax.clamp(min=p["floor"]))) - _emax(p)
        scale = torch.exp2(e.clamp(min=E8M0_MIN_EXP))
    return {"y": (xg / nonzero(scale)[..., None]).reshape(M, N), "scale": scale}


LOG2_ABS = 2.0 ** -21  # lg2.approx.f32's absolute error (2^-22.6 in PTX ISA §9.7.3.20), rounded up


def k_group_scale(x, s, p, c, xs):
    """The scale's bound: per_token_quant's; with ue8m0, 0 (a power of two is exact) except where the kernel's raw
    scale max(amax, floor) / qmax, within its bound, or its log2 (an approximation) may fall on either side of a
    power of two: there the next power of two down or up is right too. E = s/2 there, not s: the budget counts E in
    the float32 spacing at |s| - E (verifier.judge.tolerance.Errors.budget), and s/2 and 2s are each 2^23 spacings
    of that from s (E = s would count it at 0, a subnormal spacing: any scale at all); that the scale is a power of
    two is the invariant ue8m0_pow2's. A zero group with floor 0 may have any scale (its y is 0 under every one).
    With ue8m0='floor' the raw value is max(amax, floor), exact."""
    mode = ue8m0_mode(p)
    if mode is None:
        return k_scale(x, s, p, c, xs)
    M, N = x.shape
    xg = x.reshape(M, N // p["group_size"], p["group_size"])
    raw = np.maximum(np.abs(xg).max(axis=-1), float(np.float32(p["floor"])))  # the value whose log2 is rounded
    if mode == "ceil":
        raw = raw / float(p["qmax"])
    # the floor mode's raw value is the amax itself, exact: only an approximate log2 may put it on either side
    E_raw = k_scale(x, raw, p, c, xs) if mode == "ceil" else np.zeros_like(raw)
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.log2(raw)
        slack = E_raw / raw / np.log(2.0) + LOG2_ABS
    near = np.abs(lg - np.round(lg)) <= slack
    # a zero group without a floor: y is 0 under any scale, so E8M0's 2^-127 and a float32 scale's 0 both pass
    # (E = s counts it at a subnormal spacing: any scale, as above)
    return np.where(raw == 0, np.abs(s), np.where(near, np.abs(s) / 2.0, 0.0))


def _off_pow2(inp, ys, p):
    """[M]: how many of the row's finite scales are neither a power of two nor 0 (ue8m0 declared; else 0)."""
    s = np.asarray(ys["scale"], dtype=np.float64)
    if ue8m0_mode(p) is None:
        return np.zeros(s.shape[0])
    with np.errstate(invalid="ignore"):  # a NaN / inf scale (a NaN / inf group) is the values' to judge
        bad = np.isfinite(s) & ~((np.frexp(s)[0] == 0.5) | (s == 0))
    return bad.reshape(s.shape[0], -1).sum(axis=1).astype(np.float64)


INVARIANTS = [Invariant("ue8m0_pow2", _off_pow2, 0.0,
                        "with ue8m0, every scale is a power of two (DeepGEMM keeps only its exponent) or 0 (value = "
                        "the row's scales that are not)")]


def _supports(N, params):
    G = params["group_size"]
    if not isinstance(G, int) or G < 1:
        return f"group_size={G!r} is not a positive int"
    return None if N % G == 0 else f"N={N} is not a multiple of group_size={G}"


def _groups(fill):
    """A sampler whose rows are randn groups of the op's default group (128), each group transformed by
    ``fill(rng, group_index, values)``; a kernel declaring another group size sees the same rows."""
    def sampler(rng):
        def draw(shape, dtype):
            M, N = shape
            out = rng.standard_normal(shape)
            for r in range(M):
                for g in range(N // 128):
                    out[r, g * 128:(g + 1) * 128] = fill(rng, g, out[r, g * 128:(g + 1) * 128])
            return out
        return draw
    return sampler


def _outlier(rng, g, v):
    # groups 1e3 apart (one outlier group per row): a kernel scaling by the row's amax crushes the small groups
    return v * (1e3 if g % 4 == 1 else 1.0)


def _zero_group(rng, g, v):
    # a zero group beside ordinary ones: its scale is floor / qmax and its y 0 (no 0/0)
    return v * 0.0 if g % 3 == 2 else v


def _int8_ties(rng, g, v):
    # amax = 127·2^k per group (k differing between groups): x / scale is an exact int8 tie
    k = float(rng.integers(-3, 3))
    out = (rng.integers(-126, 126, size=v.shape) + 0.5) * 2.0 ** k
    out[0] = 127.0 * 2.0 ** k
    return out


def _wide(dt):
    return dt in ("float32", "bfloat16")


GROUP_CASES = (
    OpCase("group_outliers", "groups 1e3 apart in one row: each group's own amax, not the row's", 4, 512,
           _groups(_outlier), quick=True),
    OpCase("group_zero", "an all-zero group between ordinary ones: scale = floor / qmax there, y = 0", 4, 384,
           _groups(_zero_group), quick=True),
    OpCase("group_int8_ties", "x / scale exactly at int8 ties in every group (amax 127·2^k per group)", 4, 512,
           _groups(_int8_ties), dtype_ok=_wide),
) + tuple(c for c in PTQ_CASES if c.name in ("zero_rows", "mixed_magnitudes", "fp8_ties"))


def ptgq_bytes(M, N, dt, p):
    from verifier import dtypes as _dt

    return M * N * (_dt.numpy_dtype(dt.input).itemsize + 1) + 4 * M * (N // p["group_size"])


PER_TOKEN_GROUP_QUANT = Op(
    "per_token_group_quant", inputs={"x": "MxN"},
    outputs={"y": "MxN", "scale": Tensor("MxN/group_size", dtype="float32")},
    params={"group_size": 128, "floor": 1e-10, "qmax": None, "rounding": "nearest_even", "ue8m0": False},
    reference=ptgq_reference, recipe={"y": (0.0, "ptq_y"), "scale": (1.0, "ptgq_scale")},
    kappas={"ptq_y": k_ptq_y, "ptgq_scale": k_group_scale}, out_dtypes=QUANT_OUT, float64=False,
    quantized={"y": Quantized(scale="scale", rescale=ptq_rescale)}, cases=GROUP_CASES, bytes_moved=ptgq_bytes,
    supports=_supports, invariants=INVARIANTS,
    description="dynamic per-group quantization: scale[m, g] = max(amax of the group, floor) / qmax, "
                "y = saturate(round(x / scale))",
)

"""Adversarial inputs: the case catalogue, with the named samplers (verifier.inputs.samplers) and the Hypothesis
strategies for shapes (verifier.inputs.strategies) re-exported.

A :class:`Case` is one named adversarial input: ``case.make(rng, dtypes, op, params)`` returns every
input tensor of ``op`` (x, w, b, residual, labels; see ``verifier.ops``) in ``dtypes.input`` (integer
roles in their own dtype). An op may add cases of its own (``OpDef.cases``). Weights are
random around 1 (w ~ 1 + 0.1·N(0,1), b ~ 0.1·N(0,1)), never all ones, so a kernel ignoring w fails.

A case also has a memory layout (``Case.layout``, verifier.inputs.layouts): the strided and unaligned cases
lay ordinary values out as callers' views do; the large family (more than 2^31 elements and its siblings, GPU only)
lives in verifier.inputs.large_family, which verifier.inputs.cases appends at the levels of the level table's
``large_index`` column. The Hypothesis strategies live in verifier.inputs.strategies (re-exported here).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from verifier import dtypes as _dt
from verifier.constants import DEFAULT_LEVEL
from verifier.declare.kernels import Dtypes
from verifier.errors import UsageError
from verifier.inputs import layouts as _lay
from verifier.inputs.samplers import (  # noqa: F401 (re-exported: the catalogue's named samplers)
    Sampler, exp_overflow_threshold, is_int, need_inf, rand_constant_rows, rand_fully_masked, rand_increasing_rows,
    rand_masked_prefix, rand_mean_gg_std, rand_nan_row_ends, rand_normal, rand_one_neg_inf,
    rand_partial_neg_inf_mask, rand_past_exp_overflow, rand_signed_zeros, rand_some_nan, rand_subnormals,
    rand_ulp_bumps, rand_zero_rows)
from verifier.inputs.strategies import cols, eps_values, rows, shapes  # noqa: F401 (re-exported)
from verifier.numerics.ulp import round_to
from verifier.ops import OPS, get_op
from verifier.results.levels import TABLE as LEVELS  # the one run-level table; here: which cases, at which M

__all__ = [
    "Case", "catalogue", "maker", "LEVELS", "exp_overflow_threshold",
    "rand_normal", "rand_mean_gg_std", "rand_ulp_bumps", "rand_partial_neg_inf_mask", "rand_masked_prefix",
    "rand_one_neg_inf",
    "rand_fully_masked", "rand_past_exp_overflow", "rand_constant_rows", "rand_increasing_rows",
    "rand_zero_rows", "rand_subnormals", "rand_signed_zeros", "rand_some_nan", "rand_nan_row_ends", "sparse_maker",
    "shapes", "rows", "cols", "eps_values",
]






# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------


def _cast(v: np.ndarray, dtype: str) -> np.ndarray:
    if is_int(dtype):
        return v.astype(_dt.numpy_dtype(dtype))
    with np.errstate(invalid="ignore", over="ignore"):
        return round_to(v, dtype) if dtype != "float64" else v.astype(np.float64)


def _as_dtypes(dtypes) -> Dtypes:
    if isinstance(dtypes, Dtypes):
        return dtypes
    from verifier.declare.kernels import dtypes as mk

    return mk(dtypes)


@dataclass(frozen=True)
class Case:
    """One adversarial input. ``make(rng, dtypes, op, params)`` -> {tensor: array in dtypes.input}
    holding every input of ``op``. ``ops``: the ops it applies to (None: all). ``dtype_ok``: which
    input dtypes can hold its values (None: all). ``layout``: how the harness lays the tensors out."""

    name: str
    exposes: str
    M: int
    N: int
    make: Callable = field(repr=False, compare=False)
    ops: Optional[tuple] = None
    dtype_ok: Optional[Callable[[str], bool]] = field(default=None, repr=False, compare=False)
    layout: _lay.Layout = _lay.DEFAULT

    def applies_to(self, op: str, dtypes=None) -> bool:
        if self.ops is not None and op not in self.ops:
            return False
        return dtypes is None or self.dtype_ok is None or bool(self.dtype_ok(_as_dtypes(dtypes).input))


def maker(M: int, N: int, sampler_factory: Callable[[np.random.Generator], Sampler], policy: str | None = None):
    """``make(rng, dtypes, op, params) -> {tensor: array}``: every input of ``op`` at M x N. Data
    roles (x, residual) come from ``sampler_factory`` in the input dtype; weights and biases as the
    module docstring says; integer roles (labels) from their role's maker, which sees the drawn x and
    ``policy`` (the case's label placement, None: random)."""
    def make(rng: np.random.Generator, dtypes, op: str, params: dict | None = None) -> dict:
        dt = _as_dtypes(dtypes).input
        return _inputs(rng, dtypes, op, params, M, N, lambda t, dtype: _cast(sampler_factory(rng)((M, N), dt), dtype),
                       lambda out: np.asarray(out["x"], dtype=np.float64), policy)
    return make


def _inputs(rng, dtypes, op: str, params, M: int, N: int, data: Callable, label_rows: Callable, policy,
            made_rows: Callable | None = None) -> dict:
    """Every input of ``op``, in its order (the draws' order is the seed's contract): ``data(name, dtype)`` for the
    (M, N) data roles (other data shapes: normal values), weights and biases in their own dtype, scales positive
    (0.5 + U[0, 1)), labels and indices from their role's maker given ``label_rows(inputs so far)`` (default:
    uniform in [0, N)). ``made_rows(make, dtype, params)``: an (M, N) input of the op's own maker (a mask), when
    given (a large case's SparseRows)."""
    dts, opdef, out = _as_dtypes(dtypes), get_op(op), {}
    merged = {**opdef.params, **(params or {})}
    for t in opdef.inputs:
        role = opdef.role(t)
        dtype = opdef.input_dtype(t, dts, params)  # weights: their own dtype
        shape = opdef.shape_of(t, M, N, merged)
        if role.make is not None and made_rows is not None and tuple(shape) == (M, N):
            out[t] = made_rows(role.make, dtype, merged)
        elif role.make is not None:  # the op's own maker (labels, a mask): sees the x drawn so far
            out[t] = _cast(np.asarray(role.make(rng, label_rows(out), merged, policy)), dtype)
        elif role.kind == "labels":
            out[t] = rng.integers(0, N, size=shape).astype(_dt.numpy_dtype(dtype))
        elif role.kind == "data":
            out[t] = data(t, dtype) if role.shape == "rows" else _cast(rng.standard_normal(shape), dtype)
        elif role.kind == "scale":
            out[t] = _cast(0.5 + rng.random(shape), dtype)
        else:
            v = 1.0 + 0.1 * rng.standard_normal(shape) if role.kind == "weight" else 0.1 * rng.standard_normal(shape)
            out[t] = _cast(v, dtype)
    return out


_EXP = "exp"  # ops: every op whose OpDef has exp_family (the softmax family, cross entropy)


def _has_inf(dt: str) -> bool:
    try:
        need_inf(dt, "")
    except UsageError:
        return False
    return True


def _holds(v: float) -> Callable[[str], bool]:
    return lambda dt: _dt.is_float(dt) and float(_dt.finfo(dt).max) >= v


def _enough_values(dt: str) -> bool:
    """200 strictly increasing values near [-4, 4]: every dtype but the 8-bit floats has them."""
    return not dt.startswith("float8")


def _float(dt: str) -> bool:
    return _dt.is_float(dt)


# The ops whose naive formulas cancel on rows of large offset and tiny spread (variance, mean subtraction, the
# softmax's max subtraction).
_CANCEL = ("layernorm", "rmsnorm", "fused_add_rmsnorm", "softmax", "log_softmax", "online_softmax_stats")
_CANCEL += ("group_norm", "group_norm_noaffine", "row_amax", "row_mean", "var_mean", "l2norm", "rmsnorm_noweight",
            "layernorm_noweight", "layernorm_bias")  # issue #37, norm variants

# (name, exposes, M at 'ci', N, sampler factory, ops, dtype_ok, M is the point)
_TABLE = [
    ("normal_small", "baseline: ordinary N(0,1) rows", 4, 128, rand_normal, None, None, False),
    ("mean_gg_std_100_102", "cancellation / missing max subtraction: values in [100, 102]", 4, 1024,
     lambda r: rand_mean_gg_std(r, 101.0, 1.0), None, _float, False),
    ("mean_gg_std_1000", "E[x²]-E[x]² variance cancellation: values 1000 ± 1", 4, 1024,
     lambda r: rand_mean_gg_std(r, 1000.0, 1.0), None, _holds(1001.0), False),
    ("cancel_ulp_bumps", "cancellation in every dtype: rows of 1000s with one or two elements a few ULPs above, "
     "and 1000 + a few ULPs (E[x²] - E[x]² loses the variance)", 4, 512, rand_ulp_bumps, _CANCEL, _holds(1024.0),
     False),
    ("partial_neg_inf_mask", "-inf mask: exp(-inf - m) must be 0, not NaN", 4, 256,
     rand_partial_neg_inf_mask, _EXP, _has_inf, False),
    ("one_neg_inf_row32", "a single -inf in a warp-wide row of 32", 4, 32, rand_one_neg_inf, _EXP, _has_inf,
     False),
    ("fully_masked_rows", "all -inf rows: NaN there, and no NaN leaking into other rows", 4, 64,
     rand_fully_masked, _EXP, _has_inf, False),
    ("masked_prefix_40000", "the first 33,000 of 40,000 elements -inf (left padding): a tile of only -inf before the "
     "first finite value (tiles up to 32,768), where an online max gives exp(-inf - -inf) = NaN", 2, 40000,
     rand_masked_prefix, _EXP, _has_inf, False),
    # the ops whose kernels split a long row into blocks and merge the blocks' (m, l) or lse after: on every exp op
    # its 160,000 values cost the CPU CI ~40 s (cross entropy has ce_masked_prefix_80000)
    ("masked_prefix_80000", "the first 70,000 of 80,000 elements -inf: a whole 65,536-column block of only -inf (a "
     "row split into blocks of Triton's 64K element limit whose lse are merged after: that block's exp(-inf - -inf) "
     "= NaN spoils the row)", 2, 80000, lambda r: rand_masked_prefix(r, 0.875), ("logsumexp", "online_softmax_stats"),
     _has_inf, False),
    ("nan_row_ends_40000", "one NaN at column 0 or at the last of 40,000: an online max starting at -inf drops a NaN "
     "in its first tile (maxnum(NaN, -inf) = -inf, then a guard skipping -inf lanes skips it); the row must be NaN",
     2, 40000, rand_nan_row_ends, _EXP, _float, False),
    ("d1", "row of one element", 4, 1, rand_normal, None, None, False),
    ("d7_below_warp", "row shorter than a warp: empty lanes must hold the merge identity", 4, 7, rand_normal,
     None, None, False),
    ("d15_below_warp", "row of 15: half-warp and empty lanes", 4, 15, rand_normal, None, None, False),
    ("d31_below_warp", "row of 31: one empty lane", 4, 31, rand_normal, None, None, False),
    ("d32_warp", "row of exactly one warp", 4, 32, rand_normal, None, None, False),
    ("d33_above_warp", "row of 33: one element past the warp (tail loop)", 4, 33, rand_normal, None, None, False),
    ("n1000", "non-power-of-two row length 1000", 4, 1000, rand_normal, None, None, False),
    ("n3584", "non-power-of-two hidden size 3584", 2, 3584, rand_normal, None, None, False),
    ("n5120", "non-power-of-two hidden size 5120", 2, 5120, rand_normal, None, None, False),
    ("cols_mod4_1029", "N % 4 != 0: vectorized (float4) loads need a scalar tail", 4, 1029, rand_normal, None,
     None, False),
    ("cols_not_mult256_772", "N not a multiple of 256 (block size): partial last block", 4, 772, rand_normal,
     None, None, False),
    ("past_exp_overflow", "values past exp overflow: exp without max subtraction gives inf/NaN", 4, 256,
     rand_past_exp_overflow, _EXP, _float, False),
    ("constant_rows", "constant rows: variance exactly 0, softmax exactly uniform", 4, 256, rand_constant_rows,
     None, None, False),
    ("increasing_rows", "strictly increasing rows: online softmax must rescale at every element", 4, 200,
     rand_increasing_rows, None, _enough_values, False),
    ("zero_rows", "all-zero rows: rms 0, only eps keeps the norm finite", 4, 256, rand_zero_rows, None, None, False),
    ("subnormals", "subnormal inputs: flush-to-zero and underflowing squares", 4, 256, rand_subnormals, None,
     _float, False),
    ("signed_zeros", "+0 and -0 only", 4, 64, rand_signed_zeros, None, _float, False),
    ("some_nan", "NaN in the input must propagate to its row only", 4, 128, rand_some_nan, None, _float, False),
    ("m1", "a single row (M = 1)", 1, 1024, rand_normal, None, None, True),
    ("m7_rows_not_mult_block", "M = 7: not a multiple of rows per block", 7, 96, rand_normal, None, None, True),
    ("m13_rows_not_mult_block", "M = 13: not a multiple of rows per block", 13, 96, rand_normal, None, None, True),
    ("vocab_152064", "vocabulary-length row (Qwen, 152064): long loops, sum error growth", 2, 152064,
     rand_normal, None, None, True),
    ("m2049_short_rows", "2049 rows of 16: several rows per program from a large batch (attorch: 2 from 2048 rows, "
     "N < 64) and an odd M: a grid of M // R never reaches the last row", 2049, 16, rand_normal, None, None, True),
]
THOROUGH_ONLY = ("m2049_short_rows",)  # 2049 programs: seconds per kernel and dtype in the interpreter CI runs ci in

_QUICK = ("normal_small", "d7_below_warp", "mean_gg_std_1000", "fully_masked_rows", "zero_rows", "increasing_rows")

# (name, exposes, M at 'ci', N, layout): ordinary N(0, 1) values laid out as callers' views are. Last in the
# catalogue: a CUDA fault ends a kernel's battery, so every ordinary case has run by then.
_LAYOUT_CASES = [
    ("strided_rows_pad64", f"rows N + {_lay.ROW_PAD} elements apart (a slice qkv[:, :N]); the gaps between rows "
     "hold the dtype's max and must be neither read into a result nor written", 6, 1024, _lay.STRIDED),
    ("unaligned_1elem_past_16bytes", f"every tensor starts one element past a {_lay.ALIGN}-byte boundary (a view "
     "into a larger buffer): vector loads chosen from N alone fault", 4, 1024, _lay.UNALIGNED),
]
def sparse_maker(M: int, N: int, wrap: int, stride=None):
    """``make`` of a large case (verifier.inputs.large_family): data roles, and (M, N) inputs of an op's own maker (a
    mask), as SparseRows (a PATTERN-element pattern repeated, the judged rows drawn on their own: a whole float64
    mask would be 17 GB at 2^31 elements), weights and biases as usual, labels random (1-D: held whole)."""
    def make(rng: np.random.Generator, dtypes, op: str, params: dict | None = None) -> dict:
        dt = _as_dtypes(dtypes).input

        def data(t, dtype):
            pattern = _cast(rand_normal(rng)((1, _lay.PATTERN), dt), dt).reshape(-1)
            judged = _lay.judged_rows(M, N, wrap, stride)
            own = _cast(rand_normal(rng)((len(judged), N), dt), dt)
            return _lay.SparseRows((M, N), pattern.dtype, dict(zip(judged.tolist(), own)), pattern, stride)

        def made(make, dtype, merged):  # a mask, say: its maker run on the judged rows, and on rows for the pattern
            judged = _lay.judged_rows(M, N, wrap, stride)
            own = _cast(np.asarray(make(rng, np.zeros((len(judged), N)), merged, None)), dtype)
            rows = -(-_lay.PATTERN // N)
            pattern = _cast(np.asarray(make(rng, np.zeros((rows, N)), merged, None)), dtype).reshape(-1)
            return _lay.SparseRows((M, N), pattern.dtype, dict(zip(judged.tolist(), own)), pattern[:_lay.PATTERN],
                                   stride)

        return _inputs(rng, dtypes, op, params, M, N, data, lambda out: np.broadcast_to(np.float64(0.0), (M, N)), None,
                       made)
    return make


def catalogue(op: str, dtypes=None, level: str = DEFAULT_LEVEL) -> list[Case]:
    """The adversarial cases for ``op`` (and, when given, the input dtype of ``dtypes``: cases
    whose values the dtype cannot hold, e.g. -inf in float8_e4m3fn or 1000 in int8, are left out).

    level: 'quick' a handful of cases; 'ci' every case at small M, the strided and unaligned layouts last;
    'thorough' every case with M = 16 rows (M = 1, 7, 13 and the vocabulary row keep their M). The large family
    (verifier.inputs.large_family) is appended by verifier.inputs.cases.cases_for."""
    opdef = get_op(op)
    if level not in LEVELS:
        raise UsageError(f"unknown run level {level!r}", fix=f"use one of {', '.join(LEVELS)}")
    lv = LEVELS[level]
    exp_ops = tuple(o.name for o in OPS.values() if o.exp_family)
    rows = [(name, exposes, M, N, factory, exp_ops if ops == _EXP else ops, ok, fixed_m, None, name in _QUICK)
            for name, exposes, M, N, factory, ops, ok, fixed_m in _TABLE]
    rows += [(c.name, c.exposes, c.M, c.N, c.sampler, (opdef.base,), c.dtype_ok, c.fixed_m, c.policy, c.quick)
             for c in opdef.cases if set(c.needs) <= set(opdef.inputs)]
    cases = []
    for name, exposes, M, N, factory, ops, ok, fixed_m, policy, quick in rows:
        if lv.quick_cases_only and not quick or name in THOROUGH_ONLY and level != "thorough":
            continue
        if lv.rows is not None and not fixed_m:
            M = lv.rows
        case = Case(name, exposes, M, N, maker(M, N, factory, policy), ops, ok)
        if case.applies_to(opdef.base, dtypes):  # a variant (optional inputs present) has its op's cases
            cases.append(case)
    if not lv.quick_cases_only:
        for name, exposes, M, N, kind in _LAYOUT_CASES:
            M = lv.rows or M
            cases.append(Case(name, exposes, M, N, maker(M, N, rand_normal), layout=_lay.Layout(kind)))
    return cases

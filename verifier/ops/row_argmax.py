"""row_argmax: x[M,N] -> index[M] = torch.argmax(x, dim=-1) (greedy sampling: ggml's ``argmax``, vLLM's and SGLang's
greedy paths), optionally value[M] = x at the pick (``torch.max(x, dim=-1)``'s values).

Exact: a kernel compares the input values themselves, so the pick is decided exactly (no ULP band: a kernel that
compares in a narrower dtype than its input, or drops an index in its lane reduction, picks a wrong column). Ties are
declared with ``ties``: 'first' (torch.argmax: the first index of the maximum, the default) or 'any' (a kernel whose
reduction order returns some tied index); -0 ties +0. NaN is the maximum (torch): with the default
``Contracts(nan_inputs='propagate')`` a row holding a NaN must give a NaN's index; a kernel comparing with ``>`` skips
NaN and declares ``nan_inputs='unsupported'``. A row of only -inf gives 0 (torch; ``neg_inf_rows='first'``) or -1
(``'minus_one'``: ggml's scan from -FLT_MAX finds nothing above it), a contract param: undeclared, either passes with a
warning naming it. Judged by verifier.judge.argmax; ``index_dtype`` 'int64' (torch) or
'int32' (ggml writes int32).
"""
from __future__ import annotations

import numpy as np

from verifier.ops.model import ArgMax, Op, OpCase, Tensor
from verifier.ops.samplers import fit as _fit, holds_inf as _holds_inf


def first_max(x):
    """torch.argmax's pick, stated: the first NaN of a row holding one, else the first column equal to the row's
    maximum (-0 == +0), as an int64 tensor."""
    import torch

    nan = torch.isnan(x)
    best = torch.where(nan, torch.full_like(x, -np.inf), x).amax(dim=-1, keepdim=True)
    hit = torch.where(nan.any(dim=-1, keepdim=True), nan, x == best)
    return hit.to(torch.int8).argmax(dim=-1)  # the first True (argmax of 0 / 1 returns the first maximum)


def reference(inputs, params):
    x = inputs["x"]
    index = first_max(x)
    if params.get("neg_inf_rows") == "minus_one":  # ggml: nothing above its -FLT_MAX start, the sentinel -1
        index = index.masked_fill((x == -np.inf).all(dim=-1), -1)
    out = {"index": index}
    if params.get("value"):
        out["value"] = x.gather(-1, index.clamp(min=0)[:, None])[:, 0]  # -1 (declared): -inf, x[0]
    return out


def _exact(x, y, p, c, xs):
    return np.zeros_like(y)  # a pick and the input value at it: no arithmetic


# --------------------------------------------------------------------------- cases


def _tied(rng):
    """Rows of four levels (integers 0..3): the maximum tied at several columns of every row."""
    return lambda shape, dtype: _fit(rng.integers(0, 4, size=shape).astype(np.float64), dtype)


def _constant(rng):
    """All-equal rows: every column ties (first: 0)."""
    return lambda shape, dtype: _fit(np.repeat(rng.standard_normal((shape[0], 1)), shape[1], axis=1), dtype)


def _max_last(rng):
    """N(0, 1) rows whose maximum (4) is the last column (past every vector, warp and tile boundary), and by row: a tie
    at column 0 too, at the middle, or none."""
    def fn(shape, dtype):
        M, N = shape
        v = rng.standard_normal(shape)
        v[:, N - 1] = 4.0
        for i in range(M):
            if i % 3 == 1:
                v[i, 0] = 4.0
            elif i % 3 == 2 and N > 2:
                v[i, N // 2] = 4.0
        return _fit(v, dtype)
    return fn


def _one_ulp(rng):
    """The row's maximum one ULP (of the input dtype) above the second largest, the second placed first (a random
    earlier column; rows of 0.1·N(0, 1) below both): a kernel comparing in a narrower dtype rounds them equal and picks
    the earlier one."""
    def fn(shape, dtype):
        from verifier.numerics.ulp import ulp

        M, N = shape
        v = 0.1 * rng.standard_normal(shape)
        step = float(ulp(np.float64(1.0), dtype))  # the spacing of [1, 2): top and second both in it
        for i in range(M):
            top = float(_fit(np.array([1.125 + 0.1 * rng.random()]), dtype)[0])
            late = int(rng.integers(N // 2, N)) if N > 1 else 0
            v[i, late] = top
            if late:
                v[i, int(rng.integers(0, late))] = top - step
        return _fit(v, dtype)
    return fn


def _neg_inf(rng):
    """-inf rows (torch: index 0), rows of -inf but one finite number, -inf but the last column, and half -inf."""
    def fn(shape, dtype):
        M, N = shape
        v = rng.standard_normal(shape)
        for i in range(M):
            kind = i % 4
            if kind == 0:
                v[i] = -np.inf
            elif kind == 1:
                keep = int(rng.integers(N))
                v[i, np.arange(N) != keep] = -np.inf
            elif kind == 2:
                v[i, :N - 1] = -np.inf
            else:
                v[i, rng.permutation(N)[: N // 2]] = -np.inf
        return _fit(v, dtype)
    return fn


def _lowest_finite(rng):
    """Rows at the dtype's lowest finite value (-FLT_MAX, -65504: the mask value of Hugging Face's
    ``masked_fill(mask, torch.finfo(dtype).min)``): a whole row of it (index 0), one column one step above it (that
    column), -inf but the last column, which holds it (the last column). No neg_inf_rows here: the rows hold finite
    numbers. A scan starting at -FLT_MAX with index -1 and ``>`` (ggml's) finds nothing above its start and writes -1."""
    def fn(shape, dtype):
        from verifier.dtypes import finfo

        M, N = shape
        low = float(finfo(dtype).min)
        v = np.full(shape, low)
        for i in range(M):
            kind = i % 3
            if kind == 1:
                v[i, int(rng.integers(N))] = float(np.nextafter(np.array(low, dtype=finfo(dtype).dtype), 0))
            elif kind == 2 and _holds_inf(dtype):
                v[i, : N - 1] = -np.inf
        return _fit(v, dtype)
    return fn


def _signed_zero(rng):
    """Rows of negatives whose maximum is 0, written -0 at some columns and +0 at others (-0 first in even rows): -0
    ties +0 (the first of either under ties='first'); a kernel comparing bit patterns ranks +0 above -0."""
    def fn(shape, dtype):
        M, N = shape
        v = -np.abs(rng.standard_normal(shape)) - 0.5
        for i in range(M):
            cols = rng.permutation(N)[:3] if N >= 3 else np.arange(N)
            cols.sort()
            v[i, cols] = 0.0
            v[i, cols[0]] = -0.0 if i % 2 == 0 else 0.0
        return _fit(v, dtype)
    return fn


def _nan_rows(rng):
    """NaN at column 0, at the last column, two NaNs (the first wins), a whole NaN row, NaN beside a +inf, none."""
    def fn(shape, dtype):
        M, N = shape
        v = rng.standard_normal(shape)
        for i in range(M):
            kind = i % 6
            if kind == 0:
                v[i, 0] = np.nan
            elif kind == 1:
                v[i, N - 1] = np.nan
            elif kind == 2:
                v[i, [N // 3, 2 * N // 3]] = np.nan
            elif kind == 3:
                v[i] = np.nan
            elif kind == 4:
                v[i, 0], v[i, N // 2] = np.inf, np.nan
        return _fit(v, dtype)
    return fn


def _normal_vocab(rng):
    """N(0, 1) rows with a random column raised to 6: the vocabulary-sized row's one clear maximum."""
    def fn(shape, dtype):
        v = rng.standard_normal(shape)
        v[np.arange(shape[0]), rng.integers(shape[1], size=shape[0])] = 6.0
        return _fit(v, dtype)
    return fn


def _is_float(dt):
    return dt in ("float32", "float16", "bfloat16", "float64")


CASES = (
    OpCase("argmax_ties", "four levels per row: the maximum tied at several columns (ties='first': the first)", 8,
           257, _tied, quick=True),
    OpCase("argmax_all_equal", "all-equal rows: every column ties; torch.argmax gives 0", 4, 100, _constant),
    OpCase("argmax_max_last", "the maximum at the last column of N = 1029 (past vector, warp and tile ends), tied "
           "with column 0 or the middle in some rows", 6, 1029, _max_last, quick=True),
    OpCase("argmax_n1", "N = 1: the index is 0", 4, 1, _normal_vocab),
    OpCase("argmax_n33", "N = 33: one past a warp, not a multiple of any vector width", 6, 33, _max_last),
    OpCase("argmax_one_ulp", "the maximum one ULP above the second largest, which comes first: comparing in a "
           "narrower dtype picks the second", 8, 300, _one_ulp, dtype_ok=_is_float, quick=True),
    OpCase("argmax_neg_inf", "-inf rows (index 0), one finite number among -inf, -inf but the last column", 8, 100,
           _neg_inf, dtype_ok=_holds_inf),
    OpCase("argmax_lowest_finite", "rows of the dtype's lowest finite value (torch.finfo.min, a mask value): the "
           "first column; one column a step above it; -inf but the last column holding it", 6, 70, _lowest_finite,
           dtype_ok=_is_float),
    OpCase("argmax_signed_zero", "the maximum is 0 written -0 and +0: they tie (the first of either)", 6, 64,
           _signed_zero, dtype_ok=_is_float),
    OpCase("argmax_nan", "NaN first, last, twice, a whole NaN row, NaN beside +inf: a NaN's index (the first)", 6, 130,
           _nan_rows, dtype_ok=_holds_inf),
    OpCase("argmax_vocab_152064", "Qwen2's vocabulary, N = 152064: a long row's one clear maximum", 2, 152064,
           _normal_vocab),
)


def _bytes(M, N, dt, p):
    from verifier import dtypes as _dt

    out = M * _dt.numpy_dtype(p["index_dtype"]).itemsize
    return M * N * _dt.numpy_dtype(dt.input).itemsize + out + (M * _dt.numpy_dtype(dt.output).itemsize
                                                              if p.get("value") else 0)


OPDEF = Op(
    "row_argmax", inputs={"x": "MxN"},
    outputs={"index": Tensor("M", dtype="index_dtype"), "value": Tensor("M", optional=True)},
    params={"ties": "first", "index_dtype": "int64", "value": None, "neg_inf_rows": None}, reference=reference,
    contract_params={"neg_inf_rows": ("first", "minus_one")},
    recipe={"index": (0.0, "exact"), "value": (0.0, "exact")}, kappas={"exact": _exact},
    argmax=ArgMax("index", value="value"), cases=CASES, bytes_moved=_bytes,
    other_names={"dst": "index", "indices": "index", "logits": "x"},
    description="index[r] = argmax_j x[r, j] (torch.argmax: NaN the maximum); ties 'first' (torch) or 'any' "
                "(declared); optional value[r] = x at the pick",
)

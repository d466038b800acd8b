"""Small samplers the bundled ops' named cases share (each op module builds its own cases from them)."""
from __future__ import annotations

import numpy as np

from verifier import dtypes as _dt
from verifier.numerics.ulp import round_to


def fit(v, dtype):
    """float64 values rounded into float ``dtype`` (exactly representable afterwards), as float64."""
    with np.errstate(invalid="ignore", over="ignore"):
        return round_to(v, dtype).astype(np.float64)


def normal(rng):
    """A case's sampler: N(0, 1) rounded into the dtype."""
    return lambda shape, dtype: fit(rng.standard_normal(shape), dtype)


def holds_inf(dt) -> bool:
    """Whether ``dt`` holds ±inf (a case of -inf logits needs it): every float dtype but float8_e4m3fn."""
    return _dt.is_float(dt) and _dt.canonical(dt) != "float8_e4m3fn"


def masked_prefix(rng, frac: float = 0.825):
    """N(0, 1) rows whose first ``frac`` of elements are -inf (left padding): the catalogue's masked_prefix_40000,
    for the ops whose own cases place something (a label) on the finite part."""
    def fn(shape, dtype):
        v = fit(rng.standard_normal(shape), dtype)
        v[..., :int(shape[-1] * frac)] = -np.inf
        return v
    return fn

"""Float64 and mpmath references, one module per op, and the certified entry point ``reference``.

Each op module exposes
  float64(inputs, params) -> (values, bounds)   vectorized float64 evaluation; bounds[k] is an a-priori
                                                  absolute bound on |values[k] - exact|, elementwise
  mp(inputs, params, rows=None, dps=60) -> dict   mpmath evaluation of the given rows (object arrays of mpf)
and documents its semantics (special values) and accumulation (which terms are exact) in its docstring.

``reference`` rounds the float64 values into the output dtype and recomputes in mpmath only the elements
whose bound interval straddles a rounding midpoint (see references._common.certify).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

import numpy as np

from references._common import certify
from verifier import dtypes as _dt
from verifier.errors import SpecError, UsageError
from verifier.ops import get_op

__all__ = ["MODULES", "Reference", "module_of", "reference"]


def module_of(op) -> object:
    """The reference module of an op (verifier.ops.model.Op): its ``reference`` as a module, an import path, or a
    function wrapped by references.from_function."""
    ref = op.reference
    if isinstance(ref, str):
        try:
            return importlib.import_module(ref if "." in ref else f"references.{ref}")
        except ImportError as e:
            raise UsageError(f"op {op.name!r}: reference module {ref!r} cannot be imported ({e})",
                             fix="give reference= a function or an importable module with float64() and mp()") from None
    if hasattr(ref, "float64"):
        return ref
    from references.from_function import FunctionReference

    return FunctionReference(op)


class _Modules(dict):
    """op name -> its reference module, resolved on first use (user ops join the registry at spec load)."""

    def __missing__(self, name):
        self[name] = module_of(get_op(name))
        return self[name]


MODULES = _Modules()


@dataclass(frozen=True)
class Reference:
    """Reference outputs of one op call (arrays are read-only).

    exact:      float64 approximation of the exact result; mpmath-corrected where recomputed.
    rounded:    the exact result correctly rounded (nearest-even) into each output's dtype; e4m3fn saturates
                as verifier.numerics.ulp.round_to. float64 outputs: equal to ``exact`` and NOT certified unless
                reference(..., certify_float64=True); their error is at most ``bound``.
    recomputed: how many elements needed mpmath.
    bound:      absolute bound on |exact - true| per element (0 where exact; u|exact| after mpmath).
    dtypes:     the dtype each output was rounded to.
    """

    exact: dict
    rounded: dict
    recomputed: int
    bound: dict
    dtypes: dict


def _check_inputs(op, inputs: dict, params: dict | None = None) -> tuple[int, int]:
    missing = [t for t in op.inputs if t not in inputs]
    if missing:
        raise UsageError(f"{op.name} reference: missing input(s) {missing}",
                         fix=f"pass all of {list(op.inputs)} as numpy arrays")
    x = np.asarray(inputs["x"])
    if x.ndim != 2 or x.shape[1] < 1:
        raise UsageError(f"{op.name} reference: x must have shape (M, N) with N >= 1, got {x.shape}",
                         fix="reshape the input to rows: x.reshape(-1, N)")
    M, N = x.shape
    for t in op.inputs:
        a = np.asarray(inputs[t])
        want = op.shape_of(t, M, N, params)
        if a.shape != want:
            raise UsageError(f"{op.name} reference: input {t!r} has shape {a.shape}, expected {want}",
                             fix=f"pass {t} with shape {want}")
        _dt.canonical(a.dtype)  # raises on an unsupported dtype
    return M, N


def reference(op: str, inputs: dict, params: dict | None, out_dtype: str, *,
              residual_dtype=None, certify_float64: bool = False) -> Reference:
    """Certified reference outputs of ``op`` on ``inputs`` (numpy arrays in the kernel's input dtype).

    params: merged over the op's defaults (verifier.ops.OPS); unknown names are an error. eps is taken as
    the float64 value given (a kernel that adds the float32 1e-6f differs from it by ~1e-23 relative).
    out_dtype: dtype of the kernel's outputs. In-out tensors (fused_add_rmsnorm's 'residual') are rounded to
    ``residual_dtype`` instead (default: the dtype of that input, as the kernel stores it in place).
    Integer outputs exist only for reduce_sum of integer inputs (exact sum; must fit the dtype).
    """
    spec = get_op(op)
    module = MODULES.get(op)
    if module is None or getattr(module, "declared_by", spec) is not spec:  # new, or declared again (a spec reloaded)
        module = MODULES[op] = module_of(spec)
    M, N = _check_inputs(spec, inputs, params)
    params = dict(params or {})
    unknown = set(params) - set(spec.params)
    if unknown:
        raise UsageError(f"{op} reference: unknown param(s) {sorted(unknown)}",
                         fix=f"{op} takes {sorted(spec.params) or 'no params'}")
    params = {**spec.params, **params}
    out = _dt.canonical(out_dtype)
    if spec.quantized:
        from verifier.numerics.quantized import resolve_params

        params = resolve_params(spec, params, out)
    dtypes = {k: out for k in spec.outputs}
    for t in spec.inouts:
        dtypes[t] = _dt.canonical(residual_dtype if residual_dtype is not None else np.asarray(inputs[t]).dtype)
    if hasattr(module, "check_inputs"):
        module.check_inputs(inputs, params)  # the op's own input rules (label range)
    dtypes.update({t: spec.output_dtype(t, None, params) for t in spec.out_fixed})  # own dtype (a float32 scale, indices)
    if out in _dt.INT_DTYPES and not spec.out_fixed and not spec.quantized:
        return _int_reference(op, module, inputs, out, dtypes)
    ints = [k for k, d in dtypes.items() if d in _dt.INT_DTYPES and k not in spec.quantized]
    if ints and hasattr(module, "mp"):
        raise UsageError(f"{op} reference: output(s) {ints} cannot be integers", fix="use a float dtype")

    values, bounds = module.float64(inputs, params)
    if spec.quantized:
        return _quantized(spec, module, inputs, params, values, bounds, dtypes, certify_float64)
    if not hasattr(module, "mp"):  # a function reference: the float64 value decides ties (references.from_function)
        floats = {k: v for k, v in values.items() if k not in ints}
        exact, rounded, _, n = certify(module, inputs, params, floats, {k: np.zeros_like(v) for k, v in floats.items()},
                                       {k: dtypes[k] for k in floats}, False)
        for k in ints:  # indices: exact integers, compared exactly
            exact[k], rounded[k] = values[k], _integers(op, k, values[k], dtypes[k])
        return _freeze(exact, rounded, n, {k: np.asarray(b, dtype=np.float64) for k, b in bounds.items()}, dtypes)
    exact, rounded, bound, n = certify(module, inputs, params, values, bounds, dtypes, certify_float64)
    return _freeze(exact, rounded, n, bound, dtypes)


def _quantized(spec, module, inputs, params, values, bounds, dtypes, certify_float64) -> Reference:
    """An op with quantized outputs: those keep t (the exact pre-quantization value, float64) as ``exact`` and
    saturate(round(t)) in their format (verifier.numerics.quantized) as ``rounded``; the other outputs (a dynamic
    scale) are certified as any float output."""
    from verifier.numerics.quantized import fmt

    q = {k: values.pop(k) for k in spec.quantized}
    qb = {k: np.asarray(bounds.pop(k), dtype=np.float64) for k in spec.quantized}
    for k in q:
        if dtypes[k] not in ("float8_e4m3fn", "float8_e5m2", "int8"):
            raise UsageError(f"{spec.name} reference: output {k!r} is quantized but the kernel writes it in {dtypes[k]}",
                             fix="declare the variant's output dtype as e4m3, e5m2 or int8: dtypes('bf16', 'e4m3')")
    others = {k: dtypes[k] for k in values}
    if hasattr(module, "mp"):
        exact, rounded, bound, n = certify(module, inputs, params, values, bounds, others, certify_float64)
    else:
        exact, rounded, _, n = certify(module, inputs, params, values, {k: np.zeros_like(v) for k, v in values.items()},
                                       others, False)
        bound = {k: np.asarray(bounds[k], dtype=np.float64) for k in values}
    for k, t in q.items():
        mode = params.get(spec.quantized[k].rounding_param, "nearest_even")
        exact[k] = np.asarray(t, dtype=np.float64)
        r = fmt(dtypes[k]).quantize(t, mode)
        if dtypes[k] == "int8":  # int8 has no NaN: a NaN t is not judged (verifier.judge.quantized)
            r = np.where(np.isnan(r), 0.0, r)
        rounded[k] = r.astype(_dt.numpy_dtype(dtypes[k]))
        bound[k] = qb[k]
    return _freeze(exact, rounded, n, bound, dtypes)


def _integers(op: str, name: str, v: np.ndarray, dtype: str) -> np.ndarray:
    """An integer output of a function reference, checked to be whole numbers within ``dtype``."""
    info = np.iinfo(_dt.numpy_dtype(dtype))
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(v) | (v != np.round(v)) | (v < info.min) | (v > info.max)
    if bad.any():
        i = tuple(int(j) for j in np.argwhere(bad)[0])
        raise SpecError(f"op {op!r}: its reference gave {v[i]!r} at {i} for the {dtype} output {name!r}",
                        fix=f"return whole numbers within {dtype} (indices as an int64 tensor)")
    return v.astype(_dt.numpy_dtype(dtype))


def _int_reference(op, module, inputs, out, dtypes) -> Reference:
    """Exact integer outputs, for ops whose reference module can give them (exact_int)."""
    if not hasattr(module, "exact_int") or not module.is_int(inputs):
        raise UsageError(f"{op} reference: integer output dtype {out} needs reduce_sum of integer inputs",
                         fix="use a float output dtype")
    s = module.exact_int(inputs)
    info = np.iinfo(_dt.numpy_dtype(out))
    if s.size and (s.min() < info.min or s.max() > info.max):
        raise UsageError(f"{op} reference: the exact sums range over [{s.min()}, {s.max()}], outside {out}",
                         fix=f"use smaller inputs or a wider output dtype than {out}")
    values, bounds = module.float64(inputs, {})
    return _freeze(values, {"y": s.astype(_dt.numpy_dtype(out))}, 0, bounds, dtypes)


def _freeze(exact, rounded, n, bound, dtypes) -> Reference:
    for d in (exact, rounded, bound):
        for a in d.values():
            a.flags.writeable = False
    return Reference(exact=exact, rounded=rounded, recomputed=int(n), bound=bound, dtypes=dict(dtypes))

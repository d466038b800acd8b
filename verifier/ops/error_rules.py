"""The error rules of verifier.ops.derived, one per torch function (the table is in that module's docstring), and
``dispatch``, which a ``Bounded`` argument sends every torch function and Tensor method to."""
from __future__ import annotations

import math
from typing import Callable
import numpy as np
import torch

from verifier.ops.bounded import B as _B
from verifier.ops.bounded import Bounded, NoErrorRule, ValuesIndices, install, lift as _lift, plain as _plain
from verifier.ops.bounded import round_err as _round_err, rounding_of as _rounding_of


# --------------------------------------------------------------------------- rules

def _add(a, b, sign=1.0):
    r = _rounding_of((a, b))
    a, b = _lift(a, r), _lift(b, r)
    v = a.v + sign * b.v
    floor = None
    if sign > 0 and a.floor is not None and b.floor is not None:  # rounding is monotone: fl(a+b) >= fl(lo_a+lo_b)
        lo = a.low() + b.low()
        floor = lo - r.u * lo.abs()
    return _B(v, a.e + b.e + _round_err(r, v, eta=False), r, floor=floor)


def _mul(a, b):
    r = _rounding_of((a, b))
    a, b = _lift(a, r), _lift(b, r)
    v = a.v * b.v
    with torch.no_grad():
        e = a.v.abs() * b.e + b.v.abs() * a.e + a.e * b.e + _round_err(r, v)
    square = a is b or (a.floor is not None and b.floor is not None and bool((a.low() >= 0).all())
                        and bool((b.low() >= 0).all()))
    return _B(v, e, r, floor=0.0 if square else None)  # a square, or a product of nonnegatives, is >= 0 rounded


def _div(a, b):
    r = _rounding_of((a, b))
    a, b = _lift(a, r), _lift(b, r)
    v = a.v / b.v
    room = b.v.abs() - b.e
    if b.floor is not None:  # a divisor known positive (a clamped or eps-shifted norm) is at least its floor
        room = torch.maximum(room, b.low())
    e = torch.where(room > 0, (a.e + v.abs() * b.e) / room.clamp_min(1e-300), torch.full_like(v, math.inf))
    e = torch.where((a.e == 0) & (b.e == 0), torch.zeros_like(v), e)
    return _B(v, e + _round_err(r, v, r.intr.div), r)


def _monotone(a, f: Callable, units: float, domain_lo=-math.inf, eta=True, closed=False):
    """f increasing or decreasing on [a - e, a + e] (inf once that leaves f's domain). ``closed``: f is finite at
    domain_lo itself (sqrt at 0), and an argument below it gives NaN, a finding of its own: the interval is cut at
    domain_lo, so sqrt(a ± e) near 0 errs by at most sqrt(a + e), not inf (which let any pick of an expert whose gate
    is sqrt(softplus(-inf)) = 0 pass)."""
    r = a.r
    v = f(a.v)
    lo, hi = a.low(), a.v + a.e
    if closed:
        lo = torch.clamp(lo, min=domain_lo)
    inside = (lo >= domain_lo if closed else lo > domain_lo) if domain_lo > -math.inf \
        else torch.ones_like(lo, dtype=torch.bool)
    with np.errstate(all="ignore"):
        d = torch.maximum((f(hi) - v).abs(), (f(torch.where(inside, lo, a.v)) - v).abs())
    d = torch.where(a.e == 0, torch.zeros_like(v), torch.where(inside, d, torch.full_like(v, math.inf)))
    d = torch.where(torch.isfinite(a.v), d, 0.0)  # f(±inf) is exact
    return _B(v, d + _round_err(r, v, units, eta), r,
              floor=0.0 if f in (torch.sqrt, torch.rsqrt, torch.exp) else None)


def _exp(a):
    a = _lift(a, _rounding_of((a,)))
    i = a.r.intr
    b = _monotone(a, torch.exp, i.exp)
    arg = torch.where(torch.isfinite(a.v), i.exp_arg * a.r.u * a.v.abs() * b.v.abs(), 0.0)  # exp(±inf) is exact
    return _B(b.v, b.e + arg, a.r, floor=0.0)


def _log(a):
    a = _lift(a, _rounding_of((a,)))
    i = a.r.intr
    b = _monotone(a, torch.log, 0.0, domain_lo=0.0, eta=False)
    return _B(b.v, b.e + (i.log_abs + i.log_rel * b.v.abs()) * a.r.u, a.r)


def _sqrt(a):
    a = _lift(a, _rounding_of((a,)))
    return _monotone(a, torch.sqrt, max(1.0, a.r.intr.rsqrt / 2), domain_lo=0.0, closed=True)


def _rsqrt(a):
    a = _lift(a, _rounding_of((a,)))
    return _monotone(a, torch.rsqrt, a.r.intr.rsqrt, domain_lo=0.0)


def _reciprocal(a):
    return _div(1, a)


def _tanh(a):
    a = _lift(a, _rounding_of((a,)))
    i = a.r.intr
    return _monotone(a, torch.tanh, i.exp + i.div + 2)


def _sigmoid(a):
    a = _lift(a, _rounding_of((a,)))
    i = a.r.intr
    return _monotone(a, torch.sigmoid, i.exp + i.div + 2)


def _pow(a, p):
    r = _rounding_of((a, p))
    if isinstance(p, Bounded) or isinstance(p, torch.Tensor):
        raise NoErrorRule("pow with a tensor exponent")
    if p == 2:
        return _mul(a, a)
    if p == 1:
        return _lift(a, r)
    if p == 0.5:
        return _sqrt(a)
    if p == -0.5:
        return _rsqrt(a)
    if p == -1:
        return _reciprocal(a)
    a = _lift(a, r)
    i = r.intr
    return _monotone(a, lambda t: torch.pow(t, p), i.exp + i.log_rel + 2,
                     domain_lo=0.0 if float(p) != int(p) else -math.inf)


def _dims(a: Bounded, dim):
    if dim is None:
        return tuple(range(a.v.dim())), a.v.numel()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    n = 1
    for d in dims:
        n *= a.v.shape[d]
    return dims, n


def _sum(a, dim=None, keepdim=False, dtype=None):
    r = _rounding_of((a,))
    a = _lift(a, r)
    dims, n = _dims(a, dim)
    if not dims:
        return a
    v = a.v.sum(dim=dims, keepdim=keepdim)
    # any order: gamma(m - 1), m the terms that are not exact zeros (v = 0 and e = 0: the kernel's term is 0 too, and
    # x + 0 = x exactly, so a sum over a masked row rounds as the sum of its kept terms does); a kernel declared online
    # rescales its running sum up to n - 1 times, one exp and one product each (the softmax family's hand model
    # counts the same)
    m = ((a.v != 0) | (a.e != 0)).sum(dim=dims, keepdim=keepdim).to(a.v.dtype)
    units = (m - 1).clamp(min=0) + max(n - 1, 0) * ((r.intr.exp + 1.0) if r.online else 0.0)
    ku = units * r.u
    g = torch.where(ku < 1, ku / (1 - ku).clamp(min=1e-300), torch.full_like(ku, math.inf))
    e = a.e.sum(dim=dims, keepdim=keepdim) + g * a.v.abs().sum(dim=dims, keepdim=keepdim)
    nonneg = a.floor is not None and bool((a.low() >= 0).all())  # a sum of nonnegatives stays >= 0 rounded
    return _B(v, e, r, floor=0.0 if nonneg else None)


def _mean(a, dim=None, keepdim=False, dtype=None):
    r = _rounding_of((a,))
    s = _sum(a, dim, keepdim)
    _, n = _dims(_lift(a, r), dim)
    v = s.v / n
    # 1/n rounded and the product: two roundings (or one division)
    return _B(v, s.e / n + _round_err(r, v, 2.0), r, floor=s.floor)


def _var(a, dim=None, unbiased=None, keepdim=False, correction=None):
    r = _rounding_of((a,))
    a = _lift(a, r)
    dims, n = _dims(a, dim)
    corr = correction if correction is not None else (1 if unbiased is None or unbiased else 0)
    m = _mean(a, dims, keepdim=True)
    d = _add(a, m, -1.0)
    s = _sum(_mul(d, d), dims, keepdim)
    return _div(s, float(max(n - corr, 0)))


def _std(a, dim=None, unbiased=None, keepdim=False, correction=None):
    return _sqrt(_var(a, dim, unbiased, keepdim, correction))


def _var_mean(a, dim=None, unbiased=None, keepdim=False, correction=None):
    return _var(a, dim, unbiased, keepdim, correction), _mean(a, dim, keepdim)


def _extreme(kind):
    def rule(a, dim=None, keepdim=False):
        r = _rounding_of((a,))
        a = _lift(a, r)
        if isinstance(dim, Bounded) or isinstance(dim, torch.Tensor):  # torch.max(a, b): elementwise
            return _binary_extreme(kind)(a, dim)
        if dim is None:
            return _B(getattr(a.v, kind)(), a.e.max(), r)
        fn = {"max": torch.max, "min": torch.min, "amax": torch.amax, "amin": torch.amin}[kind]
        dims, _ = _dims(a, dim)
        emax = a.e.amax(dim=dims, keepdim=keepdim)
        if kind in ("max", "min"):
            vals, idx = fn(a.v, dim=dim, keepdim=keepdim)
            return ValuesIndices(_B(vals, emax, r), idx)
        return _B(fn(a.v, dim=dims, keepdim=keepdim), emax, r)
    return rule


def _binary_extreme(kind):
    def rule(a, b):
        r = _rounding_of((a, b))
        a, b = _lift(a, r), _lift(b, r)
        fn = torch.maximum if kind in ("max", "amax", "maximum", "fmax") else torch.minimum
        return _B(fn(a.v, b.v), torch.maximum(a.e, b.e), r)
    return rule


def _clamp(a, min=None, max=None):
    r = _rounding_of((a,))
    a = _lift(a, r)
    lo, hi = _plain(min), _plain(max)
    v = a.v.clamp(min=lo, max=hi) if not isinstance(lo, torch.Tensor) and not isinstance(hi, torch.Tensor) else \
        torch.clamp(a.v, min=lo, max=hi)
    floor = a.floor
    if isinstance(lo, (int, float)) and math.isfinite(lo):  # clamped below at fl(lo)
        floor = lo - r.u * abs(lo) if floor is None else torch.maximum(floor, torch.tensor(lo - r.u * abs(lo)))
    return _B(v, a.e, r, floor=floor)


def _where(cond, a, b):
    r = _rounding_of((a, b))
    a, b = _lift(a, r), _lift(b, r)
    c = _plain(cond)
    return _B(torch.where(c, a.v, b.v), torch.where(c, a.e, b.e), r)


def _matmul(a, b):
    r = _rounding_of((a, b))
    a, b = _lift(a, r), _lift(b, r)
    v = a.v @ b.v
    n = a.v.shape[-1]
    e = a.e @ b.v.abs() + a.v.abs() @ b.e + a.e @ b.e + r.gamma(n) * (a.v.abs() @ b.v.abs()) + n * r.eta
    return _B(v, e, r)


def _logsumexp(a, dim, keepdim=False):
    r = _rounding_of((a,))
    a = _lift(a, r)
    m = _extreme("amax")(a, dim, keepdim=True)
    finite_m = torch.isfinite(m.v)
    shift = _B(torch.where(finite_m, m.v, torch.zeros_like(m.v)), m.e, r)
    s = _sum(_exp(_add(a, shift, -1.0)), dim, keepdim=True)
    out = _add(shift, _log(s))
    out = _B(torch.where(finite_m, out.v, m.v), torch.where(finite_m, out.e, torch.zeros_like(out.e)), r)
    if not keepdim:
        dims, _ = _dims(a, dim)
        out = _B(out.v.squeeze(dims), out.e.squeeze(dims), r)
    return out


def _softmax(a, dim, dtype=None, _stacklevel=None):
    r = _rounding_of((a,))
    a = _lift(a, r)
    m = _extreme("amax")(a, dim, keepdim=True)
    p = _exp(_add(a, m, -1.0))
    return _div(p, _sum(p, dim, keepdim=True))


def _log_softmax(a, dim, dtype=None, _stacklevel=None):
    r = _rounding_of((a,))
    a = _lift(a, r)
    m = _extreme("amax")(a, dim, keepdim=True)
    z = _add(a, m, -1.0)
    return _add(z, _log(_sum(_exp(z), dim, keepdim=True)), -1.0)


def _norm(a, p="fro", dim=None, keepdim=False, dtype=None, ord=None):
    order = ord if ord is not None else p
    r = _rounding_of((a,))
    a = _lift(a, r)
    if order in ("fro", 2, 2.0, None):
        return _sqrt(_sum(_mul(a, a), dim, keepdim))
    if order in (1, 1.0):
        return _sum(_B(a.v.abs(), a.e, r), dim, keepdim)
    if order in (math.inf, "inf"):
        return _extreme("amax")(_B(a.v.abs(), a.e, r), dim, keepdim)
    raise NoErrorRule(f"norm of order {order!r}")


def _vector_norm(a, ord=2, dim=None, keepdim=False, dtype=None):
    return _norm(a, dim=dim, keepdim=keepdim, ord=ord)


def _cumsum(a, dim, dtype=None):
    r = _rounding_of((a,))
    a = _lift(a, r)
    k = torch.arange(1, a.v.shape[dim] + 1, dtype=torch.float64)
    shape = [1] * a.v.dim()
    shape[dim] = -1
    g = (k - 1).reshape(shape) * r.u
    g = torch.where(g < 1, g / (1 - g), torch.full_like(g, math.inf))
    return _B(a.v.cumsum(dim), a.e.cumsum(dim) + g * a.v.abs().cumsum(dim), r)


def _normalize(a, p=2.0, dim=1, eps=1e-12):
    return _div(a, _clamp(_norm(a, p, dim, keepdim=True), min=eps))


def _square(a):
    return _mul(a, a)


def _norm_dims(a, normalized_shape) -> tuple:
    """The trailing dims F.layer_norm / F.rms_norm normalize over: as many as normalized_shape has."""
    k = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    n = _lift(a, _rounding_of((a,))).v.dim()
    return tuple(range(n - k, n))


def _layer_norm(a, normalized_shape, weight=None, bias=None, eps=1e-5, *_):
    """F.layer_norm as its parts: (a - mean)·rsqrt(mean((a - mean)²) + eps)·w + b (the biased variance)."""
    dims = _norm_dims(a, normalized_shape)
    d = _add(a, _mean(a, dims, keepdim=True), -1.0)
    y = _mul(d, _rsqrt(_add(_mean(_mul(d, d), dims, keepdim=True), eps)))
    y = y if weight is None else _mul(y, weight)
    return y if bias is None else _add(y, bias)


def _rms_norm(a, normalized_shape, weight=None, eps=None):
    """F.rms_norm as its parts: a·rsqrt(mean(a²) + eps)·w; eps None is the float64 reference's finfo eps, as torch."""
    dims = _norm_dims(a, normalized_shape)
    eps = float(torch.finfo(torch.float64).eps) if eps is None else eps
    y = _mul(a, _rsqrt(_add(_mean(_mul(a, a), dims, keepdim=True), eps)))
    return y if weight is None else _mul(y, weight)


_RULES = {
    "add": lambda a, b, alpha=1: _add(a, _mul(b, alpha) if alpha != 1 else b),
    "radd": lambda a, b: _add(b, a), "sub": lambda a, b, alpha=1: _add(a, _mul(b, alpha) if alpha != 1 else b, -1.0),
    "subtract": lambda a, b, alpha=1: _add(a, b, -1.0), "rsub": lambda a, b: _add(b, a, -1.0),
    "mul": _mul, "multiply": _mul, "div": lambda a, b, rounding_mode=None: _div(a, b), "true_divide": _div,
    "divide": lambda a, b, rounding_mode=None: _div(a, b), "rdiv": lambda a, b: _div(b, a),
    "exp": _exp, "log": _log, "sqrt": _sqrt, "rsqrt": _rsqrt, "reciprocal": _reciprocal, "tanh": _tanh,
    "sigmoid": _sigmoid, "pow": _pow, "square": _square, "sum": _sum, "mean": _mean, "var": _var, "std": _std,
    "var_mean": _var_mean, "amax": _extreme("amax"), "amin": _extreme("amin"), "max": _extreme("max"),
    "min": _extreme("min"), "maximum": _binary_extreme("maximum"), "minimum": _binary_extreme("minimum"),
    "fmax": _binary_extreme("fmax"), "fmin": _binary_extreme("fmin"), "clamp": _clamp, "clip": _clamp,
    "clamp_min": lambda a, m: _clamp(a, min=m), "clamp_max": lambda a, m: _clamp(a, max=m), "where": _where,
    "matmul": _matmul, "rmatmul": lambda a, b: _matmul(b, a), "mm": _matmul, "mv": _matmul, "dot": _matmul,
    "cumsum": _cumsum,
}
_COMPOSED = {"logsumexp": _logsumexp, "softmax": _softmax, "log_softmax": _log_softmax, "norm": _norm,
             "vector_norm": _vector_norm, "normalize": _normalize, "layer_norm": _layer_norm, "rms_norm": _rms_norm,
             # torch.linalg's, as __torch_function__ names them (torch.linalg.vector_norm is linalg_vector_norm)
             "linalg_vector_norm": _vector_norm,
             "linalg_norm": lambda a, ord=None, dim=None, keepdim=False, dtype=None: _norm(a, dim=dim, keepdim=keepdim,
                                                                                         ord=ord)}
# Exact on v and e alike (a signed zero or the sign bit changes nothing of the bound).
_EXACT = ("neg", "negative", "abs", "positive", "clone", "contiguous", "detach", "float", "double", "to", "type_as",
          "cpu")
# Applied to v and e the same way.
_SHAPE = ("reshape", "view", "flatten", "unsqueeze", "squeeze", "expand", "broadcast_to", "transpose", "t",
          "permute", "narrow", "select", "flip", "repeat", "movedim", "index_select", "gather", "take_along_dim",
          "roll", "unflatten", "expand_as", "view_as", "reshape_as", "diagonal", "tril", "triu")
_COMPARE = ("gt", "lt", "ge", "le", "eq", "ne", "greater", "less", "greater_equal", "less_equal", "isfinite",
            "isinf", "isnan", "isneginf", "isposinf", "signbit", "argmax", "argmin", "argsort", "sign", "logical_not",
            "__and__", "__or__", "__invert__")
# Functions whose result does not depend on values (a fresh constant shaped like the argument).
_PLAIN = ("zeros_like", "ones_like", "full_like", "empty_like")


KNOWN = frozenset(_RULES) | set(_COMPOSED) | set(_EXACT) | set(_SHAPE) | set(_COMPARE) | set(_PLAIN)


def dispatch(name: str, args: tuple, kwargs: dict):
    name = name.removeprefix("__").removesuffix("__") if name.startswith("__") and name not in _COMPARE else name
    if kwargs.get("out", None) is not None:
        raise NoErrorRule(f"{name}(out=...) (return the result instead)")
    kwargs = {k: v for k, v in kwargs.items() if k != "out"}
    if name.endswith("_") and not name.endswith("__"):
        raise NoErrorRule(f"in-place {name} (write the reference without in-place ops)")
    if name in _RULES:
        return _RULES[name](*args, **kwargs)
    if name in _COMPOSED:
        return _COMPOSED[name](*args, **kwargs)
    if name in _EXACT:
        a = args[0]
        r = _rounding_of((a,))
        a = _lift(a, r)
        if name in ("neg", "negative"):
            return _B(-a.v, a.e, r)
        if name == "abs":
            return _B(a.v.abs(), a.e, r, floor=0.0)
        return a  # conversions keep float64: the reference's value and the kernel's error
    if name in _SHAPE:
        a, rest = args[0], args[1:]
        r = _rounding_of((a,))
        a = _lift(a, r)
        rest, kw = _plain(rest), {k: _plain(v) for k, v in kwargs.items()}
        if name in ("expand_as", "view_as", "reshape_as", "type_as"):
            rest = tuple(x.v if isinstance(x, Bounded) else x for x in rest)
        floor = None if a.floor is None else getattr(a.floor, name)(*rest, **kw)
        return _B(getattr(a.v, name)(*rest, **kw), getattr(a.e, name)(*rest, **kw), r, floor=floor)
    if name in ("cat", "concat", "concatenate", "stack"):
        seq = args[0]
        r = _rounding_of((seq,))
        items = [_lift(t, r) for t in seq]
        fn = getattr(torch, "stack" if name == "stack" else "cat")
        return _B(fn([t.v for t in items], *args[1:], **kwargs), fn([t.e for t in items], *args[1:], **kwargs), r)
    if name in _COMPARE:
        plain = [_plain(a) for a in args]
        fn = getattr(torch.Tensor, name) if name.startswith("__") else getattr(torch, name)
        return fn(*plain, **{k: _plain(v) for k, v in kwargs.items()})
    if name in _PLAIN:
        return getattr(torch, name)(_plain(args[0]), *args[1:], **kwargs)
    raise NoErrorRule(f"torch.{name}")


install(dispatch, KNOWN)

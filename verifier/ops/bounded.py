"""Values with an error bound: ``Bounded`` (a float64 value and the absolute error bound of a kernel's computation
of it) and ``Rounding`` (u, eta and the intrinsic constants the rules apply). torch functions and Tensor methods given a
Bounded come to ``verifier.ops.error_rules.dispatch``; verifier.ops.derived runs a reference on them."""
from __future__ import annotations

import math
from typing import NamedTuple

import torch

class ValuesIndices(NamedTuple):
    """torch.max(x, dim)'s result: ``.values`` bounded, ``.indices`` taken from the float64 values."""

    values: "Bounded"
    indices: torch.Tensor


class NoErrorRule(Exception):
    """The reference used a function this module has no error rule for."""


class Rounding:
    """What the rules need of the kernel: u, eta and the intrinsic constants (in units of u)."""

    def __init__(self, u: float, eta: float, intr, c_in: float = 0.0, online: bool = False, io: dict | None = None):
        self.u, self.eta, self.intr, self.c_in, self.online = float(u), float(eta), intr, float(c_in), bool(online)
        self.io = dict(io or {})  # 'input' / 'output' / 'weight' -> (u, eta) of the variant's dtype: may_round

    def gamma(self, k):
        ku = k * self.u
        return ku / (1 - ku) if ku < 1 else math.inf


def f64(t) -> torch.Tensor:
    return t.to(torch.float64) if isinstance(t, torch.Tensor) else torch.as_tensor(t, dtype=torch.float64)


class Bounded:
    """A float64 value and the absolute error bound of the kernel's computation of it."""

    __slots__ = ("v", "e", "r", "floor")

    def __init__(self, v, e, r: Rounding, floor=None):
        self.v = f64(v)
        self.e = torch.broadcast_to(f64(e), self.v.shape) if isinstance(e, torch.Tensor) else \
            torch.full(self.v.shape, float(e), dtype=torch.float64)
        self.e = torch.where(torch.isfinite(self.v), self.e, 0.0)  # a special value is exact (IEEE)
        self.r = r
        # A lower bound the kernel's value cannot go below whatever its errors (a sum of squares is >= 0 in any
        # rounding; + eps then > 0): where v - e would leave a function's domain (rsqrt of a cancelled variance),
        # the interval starts here instead of making the bound infinite. None: v - e is all that is known.
        self.floor = None if floor is None else torch.broadcast_to(f64(floor), self.v.shape)

    def low(self) -> torch.Tensor:
        """The least value the kernel may have computed: v - e, or the floor where that is higher."""
        lo = self.v - self.e
        return lo if self.floor is None else torch.maximum(lo, self.floor)

    # --- the torch protocol: torch.* functions given a Bounded come here
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        return _rules().dispatch(name, args, kwargs or {})

    def __getattr__(self, name):
        if name in ("shape", "dtype", "device", "ndim", "is_cuda"):
            return getattr(self.v, name)
        if name in ("T", "mT"):
            return Bounded(getattr(self.v, name), getattr(self.e, name), self.r)
        if name in _rules().KNOWN:
            return lambda *a, **k: _rules().dispatch(name, (self,) + a, k)
        raise NoErrorRule(f"Tensor.{name}")

    def size(self, *a):
        return self.v.size(*a)

    def dim(self):
        return self.v.dim()

    def numel(self):
        return self.v.numel()

    def __len__(self):
        return len(self.v)

    def __getitem__(self, idx):
        idx = plain(idx)
        return Bounded(self.v[idx], self.e[idx], self.r, floor=None if self.floor is None else self.floor[idx])

    def __iter__(self):
        for i in range(len(self.v)):
            yield self[i]

    def __bool__(self):
        raise NoErrorRule("bool() of a value (a data-dependent branch: use torch.where)")

    def __float__(self):
        raise NoErrorRule("float() of a value (keep the computation in torch)")

    def item(self):
        raise NoErrorRule("Tensor.item (keep the computation in torch)")

    def numpy(self):
        raise NoErrorRule("Tensor.numpy (the reference leaves torch: its error cannot be followed)")

    def tolist(self):
        raise NoErrorRule("Tensor.tolist (keep the computation in torch)")

    def rounded_to(self, to: str) -> "Bounded":
        """verifier.ops.model.may_round on a bounded value: the rounding to the variant's ``to`` dtype added."""
        u, eta = self.r.io.get(to, (0.0, 0.0))
        return B(self.v, self.e + u * self.v.abs() + eta, self.r)


def _binary_dunders():
    pairs = {"__add__": "add", "__radd__": "radd", "__sub__": "sub", "__rsub__": "rsub", "__mul__": "mul",
             "__rmul__": "mul", "__truediv__": "div", "__rtruediv__": "rdiv", "__pow__": "pow", "__neg__": "neg",
             "__abs__": "abs", "__pos__": "positive", "__matmul__": "matmul", "__rmatmul__": "rmatmul",
             "__gt__": "gt", "__lt__": "lt", "__ge__": "ge", "__le__": "le", "__eq__": "eq", "__ne__": "ne"}
    for dunder, name in pairs.items():
        setattr(Bounded, dunder, (lambda n: lambda self, *a: _rules().dispatch(n, (self,) + a, {}))(name))


# --------------------------------------------------------------------------- helpers

def plain(a):
    """A Bounded's value where an index or a condition is needed (comparisons are taken from the float64 value)."""
    if isinstance(a, Bounded):
        return a.v
    if isinstance(a, (list, tuple)):
        return type(a)(plain(x) for x in a)
    return a


def rounding_of(args) -> Rounding:
    for a in args:
        if isinstance(a, Bounded):
            return a.r
        if isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, Bounded):
                    return x.r
    raise NoErrorRule("no bounded argument")


def lift(a, r: Rounding) -> Bounded:
    """A constant operand: exact if an integer tensor or an integer value, else its rounding to the accumulation
    dtype (u·|c|)."""
    if isinstance(a, Bounded):
        return a
    if isinstance(a, torch.Tensor):
        v = f64(a)
        exact = not a.is_floating_point() or bool(torch.all(v == torch.round(v)).item()) if v.numel() else True
        e = 0.0 if exact else r.u * v.abs()
        return Bounded(v, e, r)
    if isinstance(a, bool) or isinstance(a, int):
        return Bounded(torch.tensor(float(a), dtype=torch.float64), 0.0, r, floor=float(a))
    if isinstance(a, float):
        e = 0.0 if a == round(a) and math.isfinite(a) else r.u * abs(a)
        return Bounded(torch.tensor(a, dtype=torch.float64), e, r, floor=a - e if math.isfinite(a) else None)
    raise NoErrorRule(f"an operand of type {type(a).__name__}")


def nan0(t):
    return torch.nan_to_num(t, nan=math.inf, posinf=math.inf)


def round_err(r: Rounding, res, units=1.0, eta=True):
    return units * r.u * res.abs() + (r.eta if eta else 0.0)


def B(v, e, r, floor=None):
    """A result: a NaN bound reads as unbounded; an infinite or NaN value is exact (IEEE gives the kernel the same
    special value, and the comparison matches specials exactly); ``floor`` as Bounded's."""
    v = f64(v)
    return Bounded(v, torch.where(torch.isfinite(v), nan0(f64(e)), 0.0), r, floor=floor)




class _Rules:
    """Where a Bounded sends torch functions: verifier.ops.error_rules installs its dispatch and names at import (it
    imports this module, so this one cannot import it)."""

    dispatch = None
    KNOWN: frozenset = frozenset()


def install(dispatch, known) -> None:
    _Rules.dispatch, _Rules.KNOWN = staticmethod(dispatch), frozenset(known)


def _rules():
    if _Rules.dispatch is None:
        raise NoErrorRule("no error rules installed (import verifier.ops.error_rules)")
    return _Rules


_binary_dunders()


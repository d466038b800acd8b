"""What an op is: ``OpDef`` (its tensors and their roles, params, reference, error budget recipe,
invariants and adversarial cases) and ``Role`` (one input tensor: shape, kind, dtype, maker).

Every op works on a batch of rows: x has shape ``(M, N)``. Inputs are in the kernel's input dtype
unless their role says otherwise (integer labels); outputs in its output dtype, in-out tensors keep
the input dtype. An op module (verifier/ops/<op>.py) builds one OpDef; nothing else names the op.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from verifier.errors import UsageError

SHAPES = ("rows", "vector", "row")  # (M, N), (N,), (M,)
KINDS = ("data", "weight", "bias", "labels")


@dataclass(frozen=True)
class Role:
    """One input tensor. kind 'data': drawn by the case's sampler; 'weight': 1 + 0.1·N(0,1);
    'bias': 0.1·N(0,1) (never all ones / zeros, so a kernel ignoring them fails); 'labels': integer
    class indices drawn by ``make(rng, x, params, policy)``. ``dtype_param``: the op param naming the
    tensor's dtype (integer roles), else the kernel's input dtype."""

    name: str
    shape: str = "rows"
    kind: str = "data"
    dtype_param: Optional[str] = None
    make: Optional[Callable] = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.shape not in SHAPES or self.kind not in KINDS:
            raise ValueError(f"Role {self.name}: shape {self.shape!r} / kind {self.kind!r}")


@dataclass(frozen=True)
class OpCase:
    """An adversarial case only this op has: (name, exposes, M at 'ci', N, sampler factory of x,
    dtype_ok, M is the point, label policy, at the 'quick' level)."""

    name: str
    exposes: str
    M: int
    N: int
    sampler: Callable = field(repr=False, compare=False)
    dtype_ok: Optional[Callable] = field(default=None, repr=False, compare=False)
    fixed_m: bool = False
    policy: Optional[str] = None
    quick: bool = False


@dataclass(frozen=True)
class OpDef:
    """One op, declared in one place.

    roles / outputs / inouts / params: the tensors (see Role) and default parameters.
    row_outputs: outputs of shape (M,) rather than (M, N).
    reference: module name in references/ (float64 + mpmath evaluation, resolved by name there).
    recipe: {output: (base ULPs, formula name)}; kappas: {formula name: E(x, y, params, ctx, xs)},
    the absolute error bound before output rounding (verifier.judge.tolerance turns it into ULPs).
    out_dtypes: output dtypes of the standard tolerance rows (fp32 accumulation, every math mode);
    float64: also float64 out with float64 accumulation; extra_tolerances: (out, acc, recipe or None
    for ``recipe``) rows with fp32 intrinsics. online_override: the 'online' tolerance override applies.
    invariants: fn(x_raw, inputs, outputs, params, dtypes, ctx) -> [Violation], outputs in float64.
    exp_family: exponentiates its input (the -inf mask and exp overflow cases apply).
    cases: OpCase tuple, adversarial inputs only this op has.
    """

    name: str
    inputs: tuple
    outputs: tuple
    inouts: tuple = ()
    params: dict = field(default_factory=dict)
    row_outputs: tuple = ()
    vector_inputs: tuple = ()  # shorthand: Role(t, "vector") with kind weight (w) or bias (b)
    roles: tuple = ()  # explicit roles; inputs not listed get a default Role
    reference: str = ""
    recipe: dict = field(default_factory=dict)
    kappas: dict = field(default_factory=dict, repr=False)
    out_dtypes: tuple = ("float32", "float16", "bfloat16")
    float64: bool = True
    extra_tolerances: tuple = ()
    online_override: bool = False
    invariants: Optional[Callable] = field(default=None, repr=False)
    exp_family: bool = False
    cases: tuple = ()

    def role(self, tensor: str) -> Role:
        for r in self.roles:
            if r.name == tensor:
                return r
        if tensor in self.vector_inputs:
            return Role(tensor, "vector", "bias" if tensor == "b" else "weight")
        return Role(tensor)

    def shape_of(self, tensor: str, M: int, N: int) -> tuple[int, ...]:
        if tensor in self.row_outputs:
            return (M,)
        shape = self.role(tensor).shape if tensor in self.inputs else "rows"
        return {"rows": (M, N), "vector": (N,), "row": (M,)}[shape]

    def input_dtype(self, tensor: str, dt, params: Optional[dict] = None) -> str:
        """The dtype a kernel reads ``tensor`` in: its role's dtype param, the variant's weight dtype for weights
        and biases (``Dtypes.weight``, when declared), else the input dtype."""
        r = self.role(tensor)
        if r.dtype_param is None:
            if r.kind in ("weight", "bias") and getattr(dt, "weight", None):
                return dt.weight
            return dt.input
        return {**self.params, **(params or {})}[r.dtype_param]

    def tensors(self) -> tuple[str, ...]:
        seen = []
        for t in self.inputs + self.outputs:
            if t not in seen:
                seen.append(t)
        return tuple(seen)


def registry(*ops: OpDef) -> dict[str, OpDef]:
    return {op.name: op for op in ops}


def lookup_op(ops: dict, name: str) -> OpDef:
    try:
        return ops[name]
    except KeyError:
        raise UsageError(f"unknown op {name!r}", fix=f"use one of {', '.join(ops)}") from None

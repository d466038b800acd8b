"""What an op is, as a spec file declares it: ``Op`` (its tensors, params, reference, error budget, invariants,
adversarial cases, bytes moved), ``Tensor`` (one tensor's shape and role), ``Invariant`` (a per-row property) and
``OpCase`` (an adversarial input only this op has). Public through ``verifier.spec``; the bundled ops in
verifier/ops/ are declared with the same constructor.

Every op works on a batch of rows: its main input ``x`` has shape ``(M, N)``. A tensor's shape is written in the
symbols M and N, integer constants and the op's integer params: ``"MxN"``, ``"N"``, ``"M"``, ``"MxG"`` (G a param),
``"1"``. Inputs are in the kernel's input dtype unless their role says otherwise; outputs in its output dtype; an
in-out tensor keeps its input dtype.

Without a hand-derived error model (``recipe`` / ``kappas``), an op's budget is derived from its reference by
forward error propagation (verifier.ops.derived, docs/tolerances.md "Ops without an error model").
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from verifier.errors import SpecError, UsageError

SHAPES = ("rows", "vector", "row", "other")  # (M, N), (N,), (M,), anything else
KINDS = ("data", "weight", "bias", "labels", "scale")
# The role names a spec writes, and the kind each is: 'input' is drawn by the case's sampler, 'index' holds
# integer class or column indices.
ROLE_NAMES = {"input": "data", "data": "data", "weight": "weight", "bias": "bias", "index": "labels",
              "labels": "labels", "scale": "scale"}
_PUBLIC_ROLE = {"data": "input", "weight": "weight", "bias": "bias", "labels": "index", "scale": "scale"}
_DIM = re.compile(r"^(?:M|N|\d+|[A-Za-z_]\w*)$")
_NAME = re.compile(r"^[A-Za-z_]\w*$")


def parse_shape(text: str, where: str) -> tuple:
    """'MxN' -> ('M', 'N'); '1' -> (1,); 'MxG' -> ('M', 'G'). Dims are M, N, integers or param names."""
    if not isinstance(text, str) or not text.strip():
        raise SpecError(f"{where}: shape {text!r} is not a string of dims", fix="write e.g. 'MxN', 'N', 'M' or 'MxG'")
    dims = tuple(d.strip() for d in text.split("x"))
    if not all(_DIM.match(d) for d in dims):
        raise SpecError(f"{where}: shape {text!r} is not dims joined by 'x'",
                        fix="write dims joined by 'x': M, N, an integer or an integer param, e.g. 'MxN' or 'MxG'")
    return tuple(int(d) if d.isdigit() else d for d in dims)


def _kind_of(dims: tuple) -> str:
    return {("M", "N"): "rows", ("N",): "vector", ("M",): "row"}.get(dims, "other")


@dataclass(frozen=True)
class Tensor:
    """One tensor of an op: ``shape`` (e.g. 'MxN', 'N', 'M', 'MxG'), ``role`` (inputs: 'input' drawn by the case's
    sampler, 'weight' 1 + 0.1·N(0,1), 'bias' 0.1·N(0,1), 'scale' positive float32, 'index' integers in [0, N) or from
    ``make``), ``dtype`` (a fixed dtype, e.g. 'int32' or 'float32', or the name of the str param holding it; default: the
    kernel variant's dtype for the role) and ``make(rng, x, params, policy) -> array`` (how to draw it, seeing the
    drawn x as float64: index roles, an additive mask of -inf, a causal pattern)."""

    shape: str
    role: Optional[str] = None
    dtype: Optional[str] = None
    make: Optional[Callable] = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class Role:
    """One input tensor as the framework uses it. kind 'data': drawn by the case's sampler; 'weight':
    1 + 0.1·N(0,1); 'bias': 0.1·N(0,1) (never all ones / zeros, so a kernel ignoring them fails); 'scale': positive
    float32 (0.5 + U[0, 1)); 'labels': integer indices drawn by ``make(rng, x, params, policy)`` (default uniform in
    [0, N)). ``dtype_param``: the op param naming the tensor's dtype; ``dtype``: a fixed dtype; else the kernel's
    input dtype (weights and biases: the variant's weight dtype). ``dims``: the shape in M, N, ints and params."""

    name: str
    shape: str = "rows"
    kind: str = "data"
    dtype_param: Optional[str] = None
    make: Optional[Callable] = field(default=None, repr=False, compare=False)
    dims: tuple = ()
    dtype: Optional[str] = None

    def __post_init__(self):
        if self.shape not in SHAPES or self.kind not in KINDS:
            raise ValueError(f"Role {self.name}: shape {self.shape!r} / kind {self.kind!r}")
        if not self.dims:
            object.__setattr__(self, "dims", {"rows": ("M", "N"), "vector": ("N",), "row": ("M",)}[self.shape])

    @property
    def per_row(self) -> bool:
        """Its first dim is M: row r of the op owns element r (judging some rows slices it)."""
        return bool(self.dims) and self.dims[0] == "M"


@dataclass(frozen=True)
class OpCase:
    """An adversarial case only this op has: (name, exposes, M at 'ci', N, sampler factory of x,
    dtype_ok, M is the point, label policy, at the 'quick' level). ``sampler(rng)`` returns a function
    ``draw(shape, dtype) -> float64 array`` (verifier.inputs.strategies has the bundled ones)."""

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
class Invariant:
    """A per-row property of an op's outputs: ``measure(inputs, outputs, params) -> [M]`` and ``bound(inputs,
    outputs, params, ctx) -> [M]`` (or a number); a row whose measure exceeds its bound (or is NaN where the bound is
    finite) violates it. Tensors are float64 numpy arrays; ``ctx`` (verifier.numerics.errmodel.Ctx) has ``u`` (the
    accumulation dtype's unit roundoff), ``N`` and ``out`` (the output dtype), for bounds that scale with rounding.
    ``what`` says the property in words, e.g. 'sum(y) == 1 (value = |sum(y) - 1|)'."""

    name: str
    measure: Callable = field(repr=False, compare=False)
    bound: Any = field(repr=False, compare=False)
    what: str = ""


@dataclass(frozen=True)
class Quantized:
    """An output stored quantized (``Op(quantized={"y": Quantized(scale="scale")})``): the reference gives the exact
    pre-quantization value t = value / scale and the kernel writes saturate(round(t)) in the output's quantized dtype
    (fp8 e4m3fn, fp8 e5m2 or int8), compared in the quantized domain (verifier.judge.quantized).

    scale: the tensor holding the scale: an input (a static scale) or an output (a dynamic per-row scale, compared in
    its own dtype with its own budget). rescale: for a dynamic scale, ``fn(inputs, params, scale, ctx) -> (t, E)``,
    the pre-quantization value under the kernel's own scale ``scale`` ([M], float64) and the error bound of the
    kernel's t (``ctx``: verifier.numerics.errmodel.Ctx), so that a scale within its budget does not move y's
    verdict. rounding_param: the param naming the rounding mode ('nearest_even', or 'half_away' for int8
    kernels that declare it)."""

    scale: str
    rescale: Optional[Callable] = field(default=None, repr=False, compare=False)
    rounding_param: str = "rounding"


def _where_declared() -> Optional[str]:
    """'file:line' of the line that constructed the op (the first frame outside this module and the dataclass's
    generated __init__); frames walked directly, no source read."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name != __file__ and not name.startswith("<"):
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return None


@dataclass(frozen=True)
class Op:
    """One op, declared in one place.

    name: its name (kernels name it with ``op=``; ``verifier ops`` lists it).
    inputs / outputs: ``{name: shape or Tensor}`` (``{"x": "MxN", "w": "N"}``); the older tuple-of-names form with
    ``roles`` / ``vector_inputs`` / ``row_outputs`` is accepted too. inouts: inputs updated in place, also outputs.
    params: the default parameters (a kernel's spec overrides them).
    reference: the float64 reference: a function ``ref(inputs, params) -> {output: tensor}`` of float64 torch
    tensors (integer roles as int64), or a module (or its import path) with ``float64(inputs, params) -> (values,
    bounds)`` and ``mp(inputs, params, rows, dps)``, certified near rounding ties as references/*.py are.
    recipe / kappas: a hand-derived error model, ``{output: (base ULPs, formula)}`` and ``{formula: E(x, y, params,
    ctx, xs)}`` (an absolute error bound per element before output rounding); without them the budget is derived
    from the reference (verifier.ops.derived).
    out_dtypes / float64 / extra_tolerances: the (output, accumulation) pairs the budget table has.
    online_override: the op's kernels may declare ``online=True`` (a running max / sum rescaled).
    invariants: a list of ``Invariant``, or ``fn(x_raw, inputs, outputs, params, dtypes, ctx) -> [Violation]``.
    exp_family: exponentiates x (the -inf mask and exp overflow cases apply).
    cases: ``OpCase`` adversarial inputs only this op has; they join the catalogue for it.
    bytes_moved: ``fn(M, N, dtypes, params) -> int`` for ``verifier bench``; default: every input read once and
    every output written once at its dtype.
    quantized: ``{output: Quantized(scale=...)}``: outputs written as saturate(round(t)) in a quantized dtype, judged
    exactly outside the rounding-boundary band (docs/tolerances.md, "Quantized outputs").
    """

    name: str
    inputs: Any
    outputs: Any
    inouts: tuple = ()
    params: dict = field(default_factory=dict)
    row_outputs: tuple = ()
    vector_inputs: tuple = ()  # shorthand: Role(t, "vector") with kind weight (w) or bias (b)
    roles: tuple = ()  # explicit roles; inputs not listed get a default Role
    reference: Any = ""
    recipe: dict = field(default_factory=dict)
    kappas: dict = field(default_factory=dict, repr=False)
    out_dtypes: tuple = ("float32", "float16", "bfloat16")
    float64: bool = True
    extra_tolerances: tuple = ()
    online_override: bool = False
    invariants: Any = field(default=None, repr=False)
    exp_family: bool = False
    cases: tuple = ()
    bytes_moved: Optional[Callable] = field(default=None, repr=False)
    quantized: dict = field(default_factory=dict)  # output -> Quantized: compared in the quantized domain
    description: str = ""
    origin: Optional[str] = field(default=None, compare=False)  # file:line of the declaration
    out_dims: dict = field(default_factory=dict, repr=False, init=False)  # output name -> dims (the dict form)
    out_fixed: dict = field(default_factory=dict, repr=False, init=False)  # output name -> declared dtype

    def __post_init__(self):
        where = f"Op {self.name!r}"
        if not isinstance(self.name, str) or not re.match(r"^[A-Za-z_][\w.\-]*$", self.name or ""):
            raise SpecError(f"Op name {self.name!r} is not a valid name", fix="use letters, digits and '_' ('row_amax')")
        if self.origin is None:
            object.__setattr__(self, "origin", _where_declared())
        object.__setattr__(self, "params", dict(self.params or {}))
        roles = {r.name: r for r in self.roles}
        if isinstance(self.inputs, dict):
            for t, decl in self.inputs.items():
                roles[t] = _input_role(where, t, decl, self.params)
            object.__setattr__(self, "inputs", tuple(self.inputs))
        if isinstance(self.outputs, dict):
            dims, rows, fixed = {}, list(self.row_outputs), {}
            for t, decl in self.outputs.items():
                d, dtype = _output_decl(where, t, decl, quantized=t in (self.quantized or {}))
                if d == ("M",):
                    rows.append(t)
                dims[t] = d
                if dtype is not None:
                    fixed[t] = dtype
            object.__setattr__(self, "out_fixed", fixed)
            object.__setattr__(self, "outputs", tuple(self.outputs))
            object.__setattr__(self, "row_outputs", tuple(dict.fromkeys(rows)))
            object.__setattr__(self, "out_dims", dims)
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "inouts", tuple(self.inouts))
        object.__setattr__(self, "roles", tuple(roles.values()))
        object.__setattr__(self, "cases", tuple(self.cases))
        for t in self.inputs + self.outputs:
            if not isinstance(t, str) or not _NAME.match(t):
                raise SpecError(f"{where}: tensor name {t!r} is not an identifier", fix="name tensors like 'x', 'w', 'y'")
        if "x" not in self.inputs:
            raise SpecError(f"{where}: has no input 'x'", fix="name the main (M, N) input 'x': every op works on rows of x")
        if self.role("x").dims != ("M", "N"):
            raise SpecError(f"{where}: input 'x' has shape {self.role('x').dims}", fix="declare x as 'MxN'")
        if not self.outputs:
            raise SpecError(f"{where}: has no outputs", fix="declare outputs={'y': 'MxN'} (or 'M' for one per row)")
        bad_io = [t for t in self.inouts if t not in self.inputs or t not in self.outputs]
        if bad_io:
            raise SpecError(f"{where}: inouts {bad_io} must be both inputs and outputs",
                            fix="name in inouts only tensors that are in inputs and in outputs")
        if not self.reference:
            raise SpecError(f"{where}: no reference", fix="give reference=fn(inputs, params) -> {output: tensor}")
        if not (callable(self.reference) or isinstance(self.reference, str) or hasattr(self.reference, "float64")):
            raise SpecError(f"{where}: reference {self.reference!r} is neither a function nor a module",
                            fix="give a function ref(inputs, params) -> {output: float64 tensor}")
        missing = [t for t in self.recipe if t not in self.outputs] + \
                  [k for _, k in self.recipe.values() if k not in self.kappas]
        if missing:
            raise SpecError(f"{where}: recipe names {missing}, not outputs or kappas", fix="one recipe row per output")
        if self.recipe and set(self.recipe) != set(self.outputs):
            raise SpecError(f"{where}: recipe covers {sorted(self.recipe)}, outputs are {list(self.outputs)}",
                            fix="give a recipe row for every output, or none (the budget is then derived)")
        if isinstance(self.invariants, (list, tuple)):
            for inv in self.invariants:
                if not isinstance(inv, Invariant):
                    raise SpecError(f"{where}: invariants must be Invariant(...) items, got {type(inv).__name__}",
                                    fix="write invariants=[Invariant('sum', measure=..., bound=...)]")
        elif self.invariants is not None and not callable(self.invariants):
            raise SpecError(f"{where}: invariants must be a list of Invariant", fix="write invariants=[Invariant(...)]")
        for c in self.cases:
            if not isinstance(c, OpCase):
                raise SpecError(f"{where}: cases must be OpCase(...) items, got {type(c).__name__}",
                                fix="write cases=[OpCase(name, exposes, M, N, sampler)]")
        if self.bytes_moved is not None and not callable(self.bytes_moved):
            raise SpecError(f"{where}: bytes_moved must be a function", fix="bytes_moved=lambda M, N, dt, p: ...")
        object.__setattr__(self, "quantized", dict(self.quantized or {}))
        for t, q in self.quantized.items():
            if t not in self.outputs or not isinstance(q, Quantized):
                raise SpecError(f"{where}: quantized names {t!r}: {q!r}",
                                fix="quantized={output: Quantized(scale='scale')}, one entry per quantized output")
            if q.scale not in self.inputs + self.outputs or q.scale in self.quantized:
                raise SpecError(f"{where}: quantized output {t!r} has scale {q.scale!r}, not an input or output",
                                fix="name the scale tensor: an input (a static scale) or an output (a dynamic one)")
            if q.scale in self.outputs and q.rescale is None:
                raise SpecError(f"{where}: quantized output {t!r} has a dynamic scale {q.scale!r} but no rescale",
                                fix="give Quantized(rescale=fn(inputs, params, scale, ctx) -> (t, E))")
        for t in self.inputs + self.outputs:
            for d in self.dims_of(t):
                if isinstance(d, str) and d not in ("M", "N") and not isinstance(self.params.get(d), int):
                    raise SpecError(f"{where}: tensor {t!r} has dim {d!r}, which is neither M, N nor an int param",
                                    fix=f"add params={{'{d}': <int>}} or use M, N or a number")

    @property
    def derived(self) -> bool:
        """Its budget is derived from the reference (no hand-written recipe)."""
        return not self.recipe

    def role(self, tensor: str) -> Role:
        for r in self.roles:
            if r.name == tensor:
                return r
        if tensor in self.vector_inputs:
            return Role(tensor, "vector", "bias" if tensor == "b" else "weight")
        return Role(tensor)

    def dims_of(self, tensor: str) -> tuple:
        if tensor in self.out_dims and tensor not in self.inputs:
            return self.out_dims[tensor]
        if tensor in self.row_outputs:
            return ("M",)
        return self.role(tensor).dims if tensor in self.inputs else ("M", "N")

    def shape_of(self, tensor: str, M: int, N: int, params: Optional[dict] = None) -> tuple[int, ...]:
        p = {**self.params, **(params or {})}
        return tuple(M if d == "M" else N if d == "N" else d if isinstance(d, int) else int(p[d])
                     for d in self.dims_of(tensor))

    def per_row(self, tensor: str) -> bool:
        dims = self.dims_of(tensor)
        return bool(dims) and dims[0] == "M"

    def input_dtype(self, tensor: str, dt, params: Optional[dict] = None) -> str:
        """The dtype a kernel reads ``tensor`` in: its role's fixed dtype or dtype param, the variant's weight dtype
        for weights and biases (``Dtypes.weight``, when declared), float32 for scales, else the input dtype."""
        r = self.role(tensor)
        if r.dtype is not None:
            return r.dtype
        if r.dtype_param is None:
            if r.kind in ("weight", "bias") and getattr(dt, "weight", None):
                return dt.weight
            if r.kind == "scale":
                return "float32"
            if r.kind == "labels":
                return "int64"
            return dt.input
        return {**self.params, **(params or {})}[r.dtype_param]

    def output_dtype(self, tensor: str, dt) -> str:
        """The dtype a kernel writes ``tensor`` in: its declared dtype, the input dtype for an in-out tensor, else
        the variant's output dtype."""
        if tensor in self.out_fixed:
            return self.out_fixed[tensor]
        return dt.input if tensor in self.inouts else dt.output

    def tensors(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.inputs + self.outputs))

    def signature(self) -> str:
        """'x[M,N], w[N] -> y[M,N]' (in-out tensors marked), for listings."""
        def one(t):
            return f"{t}[{','.join(str(d) for d in self.dims_of(t))}]"
        ins = ", ".join(one(t) + (f" ({_PUBLIC_ROLE[self.role(t).kind]})" if self.role(t).kind != "data" else "")
                        for t in self.inputs)
        outs = ", ".join(one(t) + (" (in place)" if t in self.inouts else f" ({self.out_fixed[t]})"
                                   if t in self.out_fixed else "") for t in self.outputs)
        return f"{ins} -> {outs}"


def _input_role(where: str, name: str, decl, params: dict) -> Role:
    t = decl if isinstance(decl, Tensor) else Tensor(decl)
    dims = parse_shape(t.shape, f"{where}: input {name!r}")
    default = "data" if dims == ("M", "N") or name == "x" else "bias" if name == "b" else "weight" \
        if dims == ("N",) else "data"
    role = t.role or default
    if role not in ROLE_NAMES:
        raise SpecError(f"{where}: input {name!r} has role {role!r}", fix=f"use one of {', '.join(ROLE_NAMES)}")
    kind = ROLE_NAMES[role]
    dtype = dtype_param = None
    if isinstance(t.dtype, str) and isinstance(params.get(t.dtype), str):
        dtype_param = t.dtype  # the param that holds it, e.g. label_dtype='int64'
    elif t.dtype is not None:
        from verifier import dtypes as _dt

        try:
            dtype = _dt.canonical(t.dtype)
        except UsageError as e:
            raise SpecError(f"{where}: input {name!r}: {e.message}", fix=e.fix) from None
    if t.make is not None and not callable(t.make):
        raise SpecError(f"{where}: input {name!r}: make must be a function", fix="make=fn(rng, x, params, policy)")
    return Role(name, _kind_of(dims), kind, dtype_param=dtype_param, make=t.make, dims=dims, dtype=dtype)


def _output_decl(where: str, name: str, decl, quantized: bool = False) -> tuple:
    """(dims, declared dtype or None) of an output: ``"MxN"`` is in the variant's output dtype; ``Tensor("M",
    dtype="float32")`` (a per-row scale) or ``Tensor("MxK", dtype="int32")`` (indices, compared exactly) is fixed."""
    t = decl if isinstance(decl, Tensor) else Tensor(decl)
    if t.role not in (None, "output"):
        raise SpecError(f"{where}: output {name!r} declares role {t.role!r}",
                        fix="outputs take a shape and, when it is not the variant's output dtype, a dtype")
    dims = parse_shape(t.shape, f"{where}: output {name!r}")
    if not dims or dims[0] != "M":
        raise SpecError(f"{where}: output {name!r} has shape {t.shape!r}, not one row per input row",
                        fix="outputs are per row: 'MxN', 'M' or 'MxK'")
    dtype = None
    if t.dtype is not None:
        from verifier import dtypes as _dt

        try:
            dtype = _dt.canonical(t.dtype)
        except UsageError as e:
            raise SpecError(f"{where}: output {name!r}: {e.message}", fix=e.fix) from None
        if dtype in ("int8", "uint8", "int16") and not quantized:
            raise SpecError(f"{where}: output {name!r} in {dtype}",
                            fix="integer outputs are int32 or int64; an int8 output is quantized: declare it in "
                                "quantized={name: Quantized(scale=...)}")
    return dims, dtype


IO_ROLES = ("input", "output", "weight")


def may_round(t, to: str = "input"):
    """In an op's reference: a kernel may store this intermediate in the variant's ``to`` dtype ('input', 'output' or
    'weight') and compute on from the stored value (fused_add_rmsnorm's residual; x·rstd rounded to the I/O dtype
    before the weight). The float64 value is unchanged; the derived budget adds that rounding, u·|t| plus the dtype's
    underflow (verifier.ops.bounded.Bounded.rounded_to). No torch import here: spec files import this module."""
    if to not in IO_ROLES:
        raise SpecError(f"may_round(..., to={to!r})", fix=f"to is one of {', '.join(IO_ROLES)}")
    rounded = getattr(type(t), "rounded_to", None)
    return rounded(t, to) if rounded is not None else t


def lookup_op(ops: dict, name: str) -> Op:
    try:
        return ops[name]
    except KeyError:
        raise UsageError(f"unknown op {name!r}",
                         fix=f"use one of {', '.join(ops)}, or declare your own Op in the spec file "
                             "(docs/specs.md, 'Your own op')") from None

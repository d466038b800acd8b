"""What an op is, as a spec file declares it: ``Op`` (its tensors, params, reference, error budget, invariants,
adversarial cases, bytes moved), ``Tensor`` (one tensor's shape and role), ``Invariant`` (a per-row property) and
``OpCase`` (an adversarial input only this op has). Public through ``verifier.spec``; the bundled ops in
verifier/ops/ are declared with the same constructor.

Every op works on a batch of rows: its main input ``x`` has shape ``(M, N)``. A tensor's shape is written in the
symbols M and N, integer constants and the op's integer params: ``"MxN"``, ``"N"``, ``"M"``, ``"MxG"`` (G a param),
``"1"``. An output is per row (its first dim M) or ``"1"``, one value for the whole batch (a reduction over the
rows: a mean loss). Inputs are in the kernel's input dtype unless their role says otherwise; outputs in its output dtype; an
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
from verifier.ops.contract import Contract  # noqa: F401  (re-exported: spec files import it from here)
from verifier.ops.selection import KEEP_TIES, ArgMax, KeepTopK, Selection, check_argmax  # noqa: F401
from verifier.ops.quantized import Quantized, check_quantized  # noqa: F401  (re-exported)
from verifier.ops.intermediates import may_round  # noqa: F401  (re-exported)
from verifier.ops.tensors import (  # noqa: F401  (re-exported: Tensor and Role are declared there)
    KINDS, PUBLIC_ROLE, ROLE_NAMES, SHAPES, TENSOR_NAME, Role, Tensor, check_optional, input_role, kind_of, output_decl,
    parse_shape)

@dataclass(frozen=True)
class OpCase:
    """An adversarial case only this op has: (name, exposes, M at 'ci', N, sampler factory of x,
    dtype_ok, M is the point, label policy, at the 'quick' level, the optional inputs it needs). ``sampler(rng)``
    returns a function ``draw(shape, dtype) -> float64 array`` (verifier.inputs.strategies has the bundled ones)."""

    name: str
    exposes: str
    M: int
    N: int
    sampler: Callable = field(repr=False, compare=False)
    dtype_ok: Optional[Callable] = field(default=None, repr=False, compare=False)
    fixed_m: bool = False
    policy: Optional[str] = None
    quick: bool = False
    needs: tuple = ()  # optional inputs (Tensor(optional=True)) it is about: only kernels taking them get it


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
    out_dtypes / float64 / extra_tolerances: the (output, accumulation) pairs the budget table has (other float
    accumulations follow one rule: verifier.judge.tolerance, docs/tolerances.md "Any float accumulation").
    online_override: the op's kernels may declare ``online=True`` (a running max / sum rescaled).
    invariants: a list of ``Invariant``, or ``fn(x_raw, inputs, outputs, params, dtypes, ctx) -> [Violation]``.
    exp_family: exponentiates x (the -inf mask and exp overflow cases apply).
    cases: ``OpCase`` adversarial inputs only this op has; they join the catalogue for it.
    bytes_moved: ``fn(M, N, dtypes, params) -> int`` for ``verifier bench``; default: every input read once and
    every output written once at its dtype.
    contract_params: ``{param: (values...)}``: params whose value is a behaviour the kernel declares (softmax's
    ``masked_rows``: 'nan' or 'zeros'); left None, an output matching any of the values passes with a warning
    naming the param (verifier.judge). A value may be a ``Contract(values, when)``.
    supports: ``fn(N, params) -> None or a reason``: the row lengths the op is defined for (group_norm: N a multiple
    of its channels); other lengths are outside the op, not run and asked of no kernel (a case there is a note).
    quantized: ``{output: Quantized(scale=...)}``: outputs written as saturate(round(t)) in a quantized dtype, judged
    exactly outside the rounding-boundary band (docs/tolerances.md, "Quantized outputs").
    kept: ``KeepTopK(output, fill, at)``: an [M, N] output keeping the k largest of each row of x in place (``fill``
    elsewhere), judged tie-aware under the op's ``k`` and ``ties`` params (verifier.judge.kept).
    argmax: ``ArgMax(index, value)``: an integer [M] output holding each row's argmax of x, judged exactly under the
    op's ``ties`` param ('first' / 'any'; verifier.judge.argmax).
    other_names: ``{other name: tensor}``: names a kernel may use for a tensor in its launch arguments and launcher
    (merge_attn_states' ``v_a`` for ``x``; verifier.ops.other_names).
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
    supports: Optional[Callable] = field(default=None, repr=False, compare=False)
    quantized: dict = field(default_factory=dict)  # output -> Quantized: compared in the quantized domain
    description: str = ""
    contract_params: dict = field(default_factory=dict)
    selection: Optional[Selection] = field(default=None, repr=False)
    kept: Optional[KeepTopK] = field(default=None, repr=False)  # keeps the top k in place (verifier.judge.kept)
    argmax: Optional[ArgMax] = field(default=None, repr=False)  # each row's argmax (verifier.judge.argmax)
    other_names: dict = field(default_factory=dict)
    origin: Optional[str] = field(default=None, compare=False)  # file:line of the declaration
    out_dims: dict = field(default_factory=dict, repr=False, init=False)  # output name -> dims (the dict form)
    out_fixed: dict = field(default_factory=dict, repr=False, init=False)  # output name -> declared dtype
    optional: dict = field(default_factory=dict, repr=False, init=False)  # optional input name -> its Role
    # optional output name -> (dims, declared dtype or None): an extra output only the kernels that declare it write
    optional_outputs: dict = field(default_factory=dict, repr=False, init=False)
    base: str = field(default="", compare=False, init=False)  # a variant's op (Op.variant); else its own name
    of: Any = field(default=None, repr=False, compare=False, init=False)  # a variant's op itself
    out_dtype_params: dict = field(default_factory=dict, repr=False, init=False)  # output name -> its dtype's param
    out_dtype_params: dict = field(default_factory=dict, repr=False, init=False)  # output name -> its dtype's param

    def __post_init__(self):
        where = f"Op {self.name!r}"
        if not isinstance(self.name, str) or not re.match(r"^[A-Za-z_][\w.\-]*$", self.name or ""):
            raise SpecError(f"Op name {self.name!r} is not a valid name", fix="use letters, digits and '_' ('row_amax')")
        if self.origin is None:
            object.__setattr__(self, "origin", _where_declared())
        object.__setattr__(self, "params", dict(self.params or {}))
        if not self.base:
            object.__setattr__(self, "base", self.name)
        roles = {r.name: r for r in self.roles}
        if isinstance(self.inputs, dict):
            optional = {}
            for t, decl in self.inputs.items():
                role = input_role(where, t, decl, self.params)
                if isinstance(decl, Tensor) and decl.optional:
                    check_optional(where, t, role, self.params)
                    optional[t] = role
                else:
                    roles[t] = role
            object.__setattr__(self, "optional", optional)
            object.__setattr__(self, "inputs", tuple(t for t in self.inputs if t not in optional))
        if isinstance(self.outputs, dict):
            dims, rows, fixed, by_param, extra = {}, list(self.row_outputs), {}, {}, {}
            for t, decl in self.outputs.items():
                d, dtype = output_decl(where, t, decl, self.params, quantized=t in (self.quantized or {}))
                if isinstance(decl, Tensor) and decl.optional:
                    check_optional(where, t, None, self.params, output=True)
                    extra[t] = (d, dtype)
                    if self.params.get(t) is not True:  # written only by the kernels that set it True
                        continue
                if d == ("M",):
                    rows.append(t)
                dims[t] = d
                if dtype is not None and dtype in self.params:
                    by_param[t] = dtype
                    fixed[t] = self.params[dtype]  # the default; output_dtype(t, dt, params) reads the kernel's
                elif dtype is not None:
                    fixed[t] = dtype
            object.__setattr__(self, "out_fixed", fixed)
            object.__setattr__(self, "out_dtype_params", by_param)
            object.__setattr__(self, "optional_outputs", extra)
            object.__setattr__(self, "outputs", tuple(t for t in self.outputs if t not in extra or t in dims))
            object.__setattr__(self, "row_outputs", tuple(dict.fromkeys(rows)))
            object.__setattr__(self, "out_dims", dims)
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "inouts", tuple(self.inouts))
        object.__setattr__(self, "roles", tuple(roles.values()))
        object.__setattr__(self, "cases", tuple(self.cases))
        for t in self.inputs + self.outputs:
            if not isinstance(t, str) or not TENSOR_NAME.match(t):
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
        missing = [t for t in self.recipe if t not in self.outputs and t not in self.optional_outputs] + \
                  [k for _, k in self.recipe.values() if k not in self.kappas]
        if missing:
            raise SpecError(f"{where}: recipe names {missing}, not outputs or kappas", fix="one recipe row per output")
        if self.recipe and set(self.recipe) - (set(self.optional_outputs) - set(self.outputs)) != set(self.outputs):
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
        if self.selection is not None and self.out_dims:  # (a variant, made by replace(), was checked as its op)
            _check_selection(where, self)
        if self.kept is not None:
            _check_kept(where, self)
        if self.argmax is not None and self.out_dims:  # (a variant was checked as its op)
            check_argmax(where, self)
        for a, t in dict(self.other_names).items():
            if not isinstance(a, str) or not TENSOR_NAME.match(a) or a in self.inputs + self.outputs \
                    or t not in self.inputs + self.outputs:
                raise SpecError(f"{where}: other name {a!r} for {t!r}",
                                fix="other_names={'v_a': 'x'}: an identifier that is no tensor's name, for a tensor")
        if self.bytes_moved is not None and not callable(self.bytes_moved):
            raise SpecError(f"{where}: bytes_moved must be a function", fix="bytes_moved=lambda M, N, dt, p: ...")
        if self.supports is not None and not callable(self.supports):
            raise SpecError(f"{where}: supports must be a function",
                            fix="supports=lambda N, params: None if N % params['channels'] == 0 else 'reason'")
        object.__setattr__(self, "quantized", dict(self.quantized or {}))
        check_quantized(where, self)
        for t in self.inputs + self.outputs:
            for d in self.dims_of(t):
                p = d[2:] if isinstance(d, str) and d.startswith("N/") else d
                if isinstance(d, str) and d not in ("M", "N") and not isinstance(self.params.get(p), int):
                    raise SpecError(f"{where}: tensor {t!r} has dim {d!r}, which is neither M, N nor an int param "
                                    "(nor N/<int param>)", fix=f"add params={{'{p}': <int>}} or use M, N or a number")

        contracts = {}
        for k, values in self.contract_params.items():
            contracts[k] = values if isinstance(values, Contract) else Contract(tuple(values or ()))
            if k not in self.params or self.params[k] is not None or not contracts[k].values:
                raise SpecError(f"{where}: contract param {k!r} needs params={{{k!r}: None}} and its values",
                                fix=f"declare params={{{k!r}: None}}, contract_params={{{k!r}: ('a', 'b')}}")
        object.__setattr__(self, "contract_params", contracts)

    def variant(self, params: Optional[dict] = None) -> "Op":
        """The op as a kernel with these params sees it: its optional inputs that ``params`` names present (in the
        shape the param says), the others absent. Without any present, the op itself; else a variant named
        ``op[mask:N,sinks]``, every other field the op's own (``base`` says whose variant it is). The registry
        (verifier.ops) holds one variant per name, so every module that looks an op up by name sees its tensors."""
        if self.base != self.name:  # a variant's variant: the op's
            return self.of.variant(params)
        p = {**self.params, **(params or {})}
        for k, contract in self.contract_params.items():
            if p.get(k) is not None and p[k] not in contract.values:
                raise SpecError(f"op {self.name!r}: param {k}={p[k]!r} is not one of {list(contract.values)}",
                                fix=f"declare {k} as one of {', '.join(map(repr, contract.values))} (or leave it out)")
        roles = (*self.roles, *self.optional.values())
        dtype_params = set(self.out_dtype_params.values()) | {r.dtype_param for r in roles if r.dtype_param}
        for k in sorted(dtype_params):  # topk_softmax's values_dtype: refused here, not as a UsageError mid-run
            from verifier import dtypes as _dt

            if p[k] is None and k not in self.out_dtype_params.values():  # an input's: its role's default dtype
                continue
            try:
                _dt.canonical(p[k])
            except UsageError as e:
                raise SpecError(f"op {self.name!r}: param {k}={p[k]!r}: {e.message}", fix=e.fix) from None
        present = {}
        for t, role in self.optional.items():
            want = p.get(t)
            if want is None or want is False:
                continue
            if want is True:
                present[t] = role
                continue
            dims = parse_shape(want, f"op {self.name!r}: param {t!r}") if isinstance(want, str) else None
            full = role.dims
            if dims is None or len(dims) > len(full) or tuple(full[len(full) - len(dims):]) != dims:
                raise SpecError(f"op {self.name!r}: param {t!r} is {want!r}, not a shape {t} {full} broadcasts from",
                                fix=f"set {t}=True (shape {'x'.join(map(str, full))}), or a trailing part of it "
                                    f"(e.g. {full[-1]!r}), or None for a kernel without {t}")
            present[t] = Role(t, kind_of(dims), role.kind, dtype_param=role.dtype_param, make=role.make, dims=dims,
                              dtype=role.dtype)
        extra, dropped = {}, set()
        for t, (dims, dtype) in self.optional_outputs.items():
            want = p.get(t)
            if want is None or want is False:
                if t in self.outputs:  # written by default (its param defaults to True): this kernel does not
                    dropped.add(t)
                continue
            if want is not True:
                raise SpecError(f"op {self.name!r}: param {t!r} is {want!r}; {t} is an optional output",
                                fix=f"set {t}=False for a kernel that does not write {t}, or leave it out"
                                if t in self.outputs else
                                f"set {t}=True for a kernel that also writes {t}[{','.join(map(str, dims))}], "
                                "or leave it out")
            if t not in self.outputs:
                extra[t] = (dims, dtype)
        if not present and not extra and not dropped:
            return self
        from dataclasses import replace

        kept = tuple(t for t in self.outputs if t not in dropped)
        outs = kept + tuple(extra)  # the recipe keeps the rows of the outputs present (the others' are absent)
        v = replace(self, roles=self.roles + tuple(present.values()), inputs=self.inputs + tuple(present),
                    outputs=outs, origin=self.origin, recipe={t: r for t, r in self.recipe.items() if t in outs},
                    row_outputs=tuple(t for t in self.row_outputs if t not in dropped)
                    + tuple(t for t, (d, _) in extra.items() if d == ("M",)))
        tag = ",".join([t if r.dims == self.optional[t].dims else f"{t}:{'x'.join(map(str, r.dims))}"
                        for t, r in present.items()] + list(extra) + [f"-{t}" for t in sorted(dropped)])
        out_dims = {t: d for t, d in {**self.out_dims, **{t: d for t, (d, _) in extra.items()}}.items() if t in outs}
        out_fixed = {t: dt for t, dt in {**self.out_fixed, **{t: dt for t, (_, dt) in extra.items() if dt is not None}}
                     .items() if t in outs}
        out_dtype_params = {t: k for t, k in self.out_dtype_params.items() if t in outs}
        for k, val in (("name", f"{self.name}[{tag}]"), ("base", self.name), ("of", self), ("optional", self.optional),
                       ("optional_outputs", self.optional_outputs), ("out_dims", out_dims), ("out_fixed", out_fixed),
                       ("out_dtype_params", out_dtype_params)):  # else index_dtype='int64' read as int32
            object.__setattr__(v, k, val)
        return v

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
        return tuple(M if d == "M" else N if d == "N" else d if isinstance(d, int)
                     else N // int(p[d[2:]]) if d.startswith("N/") else int(p[d]) for d in self.dims_of(tensor))

    @property
    def reduces_rows(self) -> bool:
        """An output is one value for the whole batch (shape '1': a mean or summed loss): it depends on every row, so
        it is never judged on some rows only (the large-index case is left out, verifier.inputs.catalogue)."""
        return any(self.dims_of(t) == (1,) for t in self.outputs)

    def per_row(self, tensor: str) -> bool:
        dims = self.dims_of(tensor)
        return bool(dims) and dims[0] == "M"

    def input_dtype(self, tensor: str, dt, params: Optional[dict] = None) -> str:
        """The dtype a kernel reads ``tensor`` in: its role's fixed dtype or dtype param, the variant's weight dtype
        for weights and biases (``Dtypes.weight``, when declared), float32 for scales, else the input dtype."""
        r = self.role(tensor)
        if r.dtype is not None:
            return r.dtype
        if r.dtype_param is not None:
            named = {**self.params, **(params or {})}[r.dtype_param]
            if named is not None:  # None: the role's default below (softmax's mask_dtype)
                return named
        if r.kind in ("weight", "bias") and getattr(dt, "weight", None):
            return dt.weight
        if r.kind == "scale":
            return "float32"
        if r.kind == "labels":
            return "int64"
        return dt.input

    def output_dtype(self, tensor: str, dt, params: Optional[dict] = None) -> str:
        """The dtype a kernel writes ``tensor`` in: its declared dtype (or the dtype its dtype param names, with
        the kernel's ``params``), the input dtype for an in-out tensor, else the variant's output dtype."""
        if tensor in self.out_dtype_params:
            from verifier import dtypes as _dt

            return _dt.canonical({**self.params, **(params or {})}[self.out_dtype_params[tensor]])
        if tensor in self.out_fixed:
            return self.out_fixed[tensor]
        return dt.input if tensor in self.inouts else dt.output

    def tensors(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.inputs + self.outputs))

    def refusal(self, N: int, params: Optional[dict] = None) -> Optional[str]:
        """Why rows of N columns are outside this op with these params (its ``supports``), or None."""
        if self.supports is None:
            return None
        try:
            reason = self.supports(N, {**self.params, **(params or {})})
        except Exception as e:  # the spec's own code (a wrong signature, a missing param): its error, not ours
            raise SpecError(f"op {self.name!r}: its supports(N, params) raised {type(e).__name__}: {e}",
                            fix="supports=lambda N, params: None if N % params['channels'] == 0 else 'reason'") from e
        return f"outside op {self.name!r}: {reason}" if reason else None

    def signature(self) -> str:
        """'x[M,N], w[N] -> y[M,N]' (in-out tensors marked), for listings."""
        def one(t):
            also = [a for a, of in self.other_names.items() if of == t]
            return f"{t}[{','.join(str(d) for d in self.dims_of(t))}]" + (f" (also {', '.join(also)})" if also else "")
        ins = ", ".join(one(t) + (f" ({PUBLIC_ROLE[self.role(t).kind]})" if self.role(t).kind != "data" else "")
                        for t in self.inputs)
        outs = ", ".join(one(t) + (" (in place)" if t in self.inouts else f" ({self.out_fixed[t]})"
                                   if t in self.out_fixed else "") for t in self.outputs)
        return f"{ins} -> {outs}"

    def optional_signature(self) -> str:
        """'mask[M,N], sinks[M]': the optional inputs a kernel may declare (params of their names), or ''."""
        return ", ".join(f"{t}[{','.join(str(d) for d in r.dims)}]" for t, r in self.optional.items())

    def optional_output_signature(self, present: bool = False) -> str:
        """'lse[M] (float32)': the optional outputs a kernel may declare it writes (params of their names), or ''; with
        ``present``, those written by default that a kernel may leave out (its param False)."""
        return ", ".join(f"{t}[{','.join(str(d) for d in dims)}]" + (f" ({dt})" if dt else "")
                         for t, (dims, dt) in self.optional_outputs.items() if (t in self.outputs) == present)


def _check_selection(where: str, op: "Op") -> None:
    sel = op.selection
    if not isinstance(sel, Selection):
        raise SpecError(f"{where}: selection must be a Selection(...), got {type(sel).__name__}",
                        fix="write selection=Selection(indices='indices', scores=fn, at=fn)")
    dims = op.out_dims.get(sel.indices)
    if sel.nan not in ("free", "largest") or (sel.nan == "largest" and (sel.dense or sel.groups is not None)):
        raise SpecError(f"{where}: selection nan={sel.nan!r}",
                        fix="nan='free' (a NaN score picked or not) or 'largest' (torch.topk: NaN first; not with "
                            "dense=True or groups)")
    if sel.dense:
        integer = str(op.out_fixed.get(sel.indices, "float")).startswith("int")
        if sel.indices not in op.outputs or dims != ("M", "N") or integer or not callable(sel.scores) \
                or not callable(sel.at):
            raise SpecError(f"{where}: a dense selection names {sel.indices!r}, not a float [M, N] output (or its "
                            "scores / at are no functions)",
                            fix="declare outputs={'weights': Tensor('MxN', dtype='float32')}, "
                                "selection=Selection('weights', scores=fn, at=fn, dense=True)")
        return
    if sel.indices not in op.outputs or dims is None or len(dims) != 2:
        raise SpecError(f"{where}: selection names indices {sel.indices!r}, not an [M, k] output",
                        fix="declare the picks as an output, e.g. outputs={'indices': Tensor('Mxk', dtype='int32')}")
    if not str(op.out_fixed.get(sel.indices, "")).startswith("int"):
        raise SpecError(f"{where}: selection's indices {sel.indices!r} have no integer dtype",
                        fix="declare them Tensor('Mxk', dtype='int32') (or a str param holding 'int32' / 'int64')")
    if not callable(sel.scores) or not callable(sel.at):
        raise SpecError(f"{where}: selection's scores and at must be functions",
                        fix="scores=fn(inputs, params) -> [M, E] tensor; at=fn(inputs, params) -> {output: tensor}")


def _check_kept(where: str, op: "Op") -> None:
    kept = op.kept
    if not isinstance(kept, KeepTopK):
        raise SpecError(f"{where}: kept must be a KeepTopK(...), got {type(kept).__name__}",
                        fix="write kept=KeepTopK(output='y', fill=0.0, at=fn)")
    if kept.output not in op.outputs or op.dims_of(kept.output) != ("M", "N") or not callable(kept.at):
        raise SpecError(f"{where}: kept names {kept.output!r}, not an [M, N] output, or its at is no function",
                        fix="kept=KeepTopK(output=<an MxN output>, fill=..., at=fn(inputs, params) -> {output: tensor})")
    if not isinstance(op.params.get("k"), int) or op.params.get("ties") not in KEEP_TIES:
        raise SpecError(f"{where}: an op with kept= needs an int param 'k' and a param 'ties' in {KEEP_TIES}",
                        fix="params={'k': 8, 'ties': 'keep_all', ...}")


def lookup_op(ops: dict, name: str) -> Op:
    try:
        return ops[name]
    except KeyError:
        raise UsageError(f"unknown op {name!r}",
                         fix=f"use one of {', '.join(ops)}, or declare your own Op in the spec file "
                             "(docs/specs.md, 'Your own op')") from None

"""Per-element error budgets, in ULPs of the output dtype, derived from rounding-error analysis.

One typed table, ``TABLE[(op, output dtype, accumulation dtype, math mode)] -> {tensor: Tol}``, built
from each op's declaration (``OpDef.recipe``: base ULPs and formula per output; ``OpDef.kappas``:
the formulas, in the op's module under verifier/ops/); an (output, accumulation) pair it does not list follows one
rule (``_any_accumulation``: the same recipe with u of the declared accumulation dtype, float16 for instance).
A ``Tol`` names the output rounding allowance (``base_ulps``), the error formula (``kappa``) and
the intrinsic-function bounds of the math mode (``Intrinsics``). ``budget`` evaluates the formula
per element on the actual input, so ill-conditioned elements get a larger allowance and
well-conditioned ones stay tight:

    budget_i = base_ulps + E_i / ulp_out(max(|y_i| - E_i, 0))

``E_i`` is an absolute bound on the kernel's error *before* it rounds to the output dtype (sums in
any order, intrinsic errors, condition of the input); dividing by the smallest output spacing
in [|y_i| - E_i, |y_i| + E_i] turns it into a bound on ``ulp_distance`` (which counts representable
values). ``base_ulps`` = 1: the kernel's own final rounding plus the reference's rounding cost at
most one representable step. The derivations are in docs/tolerances.md (``table_markdown`` writes
its table); error counts are in units of u = unit roundoff of the accumulation dtype, combined as
gamma(k) = k*u / (1 - k*u) (Higham, Accuracy and Stability of Numerical Algorithms, Lemma 3.1).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from verifier import dtypes as _dt
from verifier.declare.kernels import Dtypes
from verifier.errors import SpecError, UsageError
from verifier.numerics.errmodel import F32, INTRINSICS, MATH_MODES, Ctx, Intrinsics
from verifier.numerics.quantized import resolve_params
from verifier.numerics.ulp import ulp
from verifier.ops import BUNDLED, OPS, get_op

__all__ = ["Intrinsics", "Tol", "TABLE", "INTRINSICS", "lookup", "budget", "errors", "Errors", "declared_output_ulps",
           "derive", "table_markdown"]


@dataclass(frozen=True)
class Tol:
    """Budget recipe for one output tensor: ``base_ulps`` (output rounding, in output ULPs), the
    error formula ``kappa`` (a key of its OpDef.kappas) and the math mode's intrinsic bounds."""

    base_ulps: float
    kappa: str
    math: Intrinsics


DERIVED = "derived"  # the formula name of a budget derived from the reference (verifier.ops.derived)
TIE_AWARE = "tie-aware"  # a selection's picks (verifier.judge.selection): its band is derived, its picks exact


def _recipe(op) -> dict:
    """{output: (base ULPs, formula)} of the op's float rows: its recipe, else base 1 and the derived formula (a
    declared integer output, indices, is exact); a selection's indices are tie-aware."""
    recipe = {t: r for t, r in op.recipe.items() if t in op.outputs} or \
        {t: (0.0 if op.out_fixed.get(t, "float").startswith("int") else 1.0, DERIVED) for t in op.outputs}
    if op.selection is not None:
        recipe = {**recipe, op.selection.indices: (0.0, TIE_AWARE)}
    return recipe


def _outputs(op, float64: bool = False) -> tuple:
    """The output dtypes of the op's fp32 rows: its out_dtypes, and fp8 where the budget is derived (it holds for
    any float output: fp8 quantized with a scale); with ``float64``, float64 too where the op has a float64 row."""
    outs = op.out_dtypes + (("float8_e4m3fn", "float8_e5m2") if op.derived else ())
    return tuple(dict.fromkeys(outs + (("float64",) if float64 and op.float64 else ())))


def _rows(op, part: str = "all") -> dict[tuple[str, str, str], dict[str, Tol]]:
    """One op's table rows, {(output dtype, accumulation dtype, math mode): {tensor: Tol}}: its recipe for its output
    dtypes with fp32 accumulation (every math mode) and float64 with float64 accumulation; then its extra rows
    (16-bit or integer accumulation) with the fp32 intrinsic constants (in units of a larger u they only
    over-count). An op without a recipe gets base 1 and the derived formula for every output. Pairs not listed
    follow one rule (``_any_accumulation``)."""
    recipe = _recipe(op)
    rows = {}
    combos = [(out, "float32", mode) for out in _outputs(op) for mode in MATH_MODES]
    if op.float64:
        combos.append(("float64", "float64", "precise"))
    for out, acc, mode in (combos if part != "extra" else ()):
        intr = INTRINSICS[(acc, mode)]
        rows[(out, acc, mode)] = {t: Tol(b, k, intr) for t, (b, k) in recipe.items()}
    for out, acc, extra in (op.extra_tolerances if part != "standard" else ()):
        for mode in MATH_MODES:
            rows[(out, acc, mode)] = {t: Tol(b, k, F32[mode]) for t, (b, k) in (extra or recipe).items()}
    return rows


NARROW_ACC = ("float16", "bfloat16")  # accumulation dtypes narrower than float32 that any op may declare


def _any_accumulation(op, out: str, acc: str, mode: str) -> dict[str, Tol] | None:
    """The entry of an (output, accumulation) pair the table does not list, by one rule (docs/tolerances.md, "Any
    float accumulation"): the op's own recipe and formulas, evaluated with u and eta of the declared accumulation
    dtype, for any float output the op covers. A 16-bit accumulation takes the fp32 intrinsic constants (the math
    functions run in fp32; in units of the larger u they only over-count); float64 accumulation its own (precise
    only: the fast modes' constants are fp32 approximations), on ops with a float64 row (the others' formulas read
    float32 scalars). Quantized outputs are excluded from 16-bit accumulation: their exact-tie model assumes the
    quotient is computed in float32. None where the rule does not apply."""
    if out not in _outputs(op, float64=True) or not _dt.is_float(out):
        return None
    if acc in NARROW_ACC and not op.quantized:
        intr = F32[mode]
    elif acc == "float32" or (acc == "float64" and op.float64):
        intr = INTRINSICS.get((acc, mode))
    else:
        intr = None
    return None if intr is None else {t: Tol(b, k, intr) for t, (b, k) in _recipe(op).items()}


def _build_table() -> dict[tuple[str, str, str, str], dict[str, Tol]]:
    return {(op.name,) + key: entry for part in ("standard", "extra") for op in BUNDLED
            for key, entry in _rows(op, part).items()}


TABLE: dict[tuple[str, str, str, str], dict[str, Tol]] = _build_table()  # the bundled ops (docs/tolerances.md)
_USER_ROWS: dict = {}  # id(op) -> its rows, for ops declared in spec files


def _entries(op) -> dict:
    if any(b is op for b in BUNDLED):
        return {k[1:]: v for k, v in TABLE.items() if k[0] == op.name}
    got = _USER_ROWS.get(id(op))
    if got is None or got[0] is not op:
        got = _USER_ROWS[id(op)] = (op, _rows(op))
    return got[1]


def lookup(op: str, out: str, acc: str, math_mode: str) -> dict[str, Tol]:
    """The table entry, else the rule's (``_any_accumulation``), or a SpecError naming what the op accepts."""
    opdef = get_op(op)
    rows = _entries(opdef)
    out, acc = _dt.canonical(out), _dt.canonical(acc)
    if math_mode not in MATH_MODES:
        raise UsageError(f"unknown math mode {math_mode!r}", fix=f"use one of {', '.join(MATH_MODES)}")
    key = (out, acc, math_mode)
    entry = rows.get(key) or _any_accumulation(opdef, out, acc, math_mode)
    if entry is None:
        have = sorted({(o, a) for (o, a, m) in rows if m == math_mode})
        listing = ", ".join(f"output {o} with {a} accumulation" for o, a in have)
        outs = ", ".join(o for o in _outputs(opdef, float64=True) if _dt.is_float(o))
        also = ([f"any of outputs {outs} with float16 or bfloat16 accumulation"] if not opdef.quantized else []) + \
            ([f"any of outputs {outs} with float64 accumulation in math mode 'precise'"] if opdef.float64 else [])
        fix = f"declare a supported combination: {'; '.join([listing] + also)}"
        if opdef.outputs and set(opdef.outputs) <= set(opdef.out_fixed) and out not in {o for o, _a in have}:
            # no output takes the dtypes' output (topk_softmax's values and indices): say where theirs come from
            by = ", ".join(f"{t} by param {opdef.out_dtype_params[t]!r}" if t in opdef.out_dtype_params else
                           f"{t} is {opdef.out_fixed[t]}" for t in opdef.outputs)
            fix = (f"op {op!r} sets its outputs' dtypes itself ({by}), so the dtypes' output is only this table's "
                   f"key: declare dtypes(<input>, 'f32') and, for a kernel writing in another dtype, the param "
                   f"(e.g. params={{'{next(iter(opdef.out_dtype_params.values()), 'values_dtype')}': 'bfloat16'}}); "
                   + fix)
        raise SpecError(  # a UsageError; found while a kernel runs, that kernel's error (verifier.battery)
            f"no tolerance for op {op!r} with output {out}, accumulation {acc}, math mode {math_mode!r}", fix=fix)
    return entry


def _merge_overrides(op, entry: dict[str, Tol], overrides) -> tuple[dict[str, float], bool]:
    """Per-output base_ulps after merging overrides by max, and the 'online' flag.

    Accepted: {"base_ulps": 4} (every output), {"y": {"base_ulps": 4}} (one output),
    {"online": True} (softmax / log_softmax kernels that rescale a running sum).
    """
    def number(where, val) -> float:
        try:
            v = float(val)
        except (TypeError, ValueError):
            v = float("nan")
        if not (v >= 0 and math.isfinite(v)):
            raise UsageError(f"tolerance override {where} is {val!r}", fix="give a finite number of ULPs >= 0")
        return v

    base = {t: tol.base_ulps for t, tol in entry.items()}
    online = False
    for key, val in (overrides or {}).items():
        if key == "base_ulps":
            v = number("base_ulps", val)
            base = {t: max(b, v) for t, b in base.items()}
        elif key == "online":
            if not op.online_override:
                with_online = ", ".join(o.name for o in OPS.values() if o.online_override)
                raise UsageError(f"tolerance override 'online' does not apply to op {op.name!r}",
                                 fix=f"use it only for kernels with an online normalizer ({with_online})")
            online = bool(val)
        elif key in entry:
            if not isinstance(val, dict) or set(val) - {"base_ulps"}:
                raise UsageError(f"tolerance override for output {key!r} must be {{'base_ulps': number}}, got {val!r}",
                                 fix=f"write tolerance={{'{key}': {{'base_ulps': 2}}}}")
            if "base_ulps" in val:
                base[key] = max(base[key], number(f"{key}.base_ulps", val["base_ulps"]))
        else:
            raise UsageError(f"unknown tolerance override {key!r} for op {op.name!r}",
                             fix=f"allowed keys: 'base_ulps', 'online', or an output name ({', '.join(entry)})")
    return base, online


def declared_output_ulps(op: str, dtypes: Dtypes, math_mode: str, overrides: dict | None) -> float:
    """The largest base ULPs of an output after the spec's overrides: the output rounding the kernel declares
    (2 for a kernel that rounds twice at the output), which the invariants allow too."""
    base, _ = _merge_overrides(get_op(op), lookup(op, dtypes.output, dtypes.acc, math_mode), overrides)
    return max(base.values()) if base else 1.0


def _exact_outputs(ref) -> dict:
    return {k: np.asarray(v, dtype=np.float64) for k, v in ref.exact.items()}


def budget(op: str, dtypes: Dtypes, math_mode: str, inputs: dict, ref, params: dict | None = None,
           overrides: dict | None = None, online: bool = False) -> dict[str, np.ndarray]:
    """Allowed ULP distance (output dtype) per element of every output of ``op``.

    ``inputs``: numpy arrays in the input dtype; ``ref``: a references.Reference; ``params``: the
    op's params (defaults filled in); ``overrides``: the kernel spec's ``tolerance`` dict (merged by
    max: an override can raise the allowance, never lower it); ``online``: the kernel rescales a running sum
    (KernelSpec.online; the older override {"online": True} still says so). Non-finite reference values get 0
    (they must be matched exactly).
    """
    return errors(op, dtypes, math_mode, inputs, ref, params, overrides, online).budget(ref)


@dataclass(frozen=True)
class Errors:
    """Per output: ``base`` (output rounding, ULPs, after the kernel's declarations), ``E`` (absolute error bound
    before the output rounding, per element) and ``dtypes`` (the output's dtype)."""

    base: dict
    E: dict
    dtypes: dict
    ctx: object = None  # the verifier.numerics.errmodel.Ctx the bounds were computed under (quantized outputs)

    def budget(self, ref) -> dict[str, np.ndarray]:
        """budget_i = base + E_i / ulp_out(max(|y_i| - E_i, 0)); 0 where the reference is not finite."""
        out: dict[str, np.ndarray] = {}
        for t, E in self.E.items():
            y = _exact_outputs(ref)[t]
            with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                spacing = ulp(np.maximum(np.abs(y) - E, 0.0), self.dtypes[t])
                b = self.base[t] + np.where(E > 0, E / spacing, 0.0)
            # Non-finite references must be matched exactly; a NaN bound (inf·0 in a formula) is not a
            # promise either way, so it is treated strictly too.
            out[t] = np.where(np.isfinite(y) & ~np.isnan(b), b, 0.0)
        return out


def errors(op: str, dtypes: Dtypes, math_mode: str, inputs: dict, ref, params: dict | None = None,
           overrides: dict | None = None, online: bool = False) -> Errors:
    """The parts of ``budget`` (same arguments): base ULPs and the error bound E per element of every output;
    the rounding statistics (verifier.judge.rounding) read them too."""
    opdef = get_op(op)
    entry = lookup(op, dtypes.output, dtypes.acc, math_mode)
    base, online_override = _merge_overrides(opdef, entry, overrides)
    online = bool(online or online_override)
    params = resolve_params(opdef, {**opdef.params, **(params or {})}, dtypes.output)  # a quantizer's qmax
    missing = [t for t in opdef.inputs if t not in inputs]
    if missing:
        raise UsageError(f"budget for {op!r}: inputs {missing} are missing", fix=f"pass {list(opdef.inputs)}")
    xs = {k: np.asarray(_dt.to_numpy(v), dtype=np.float64) for k, v in inputs.items()}
    exact = _exact_outputs(ref)
    any_tol = next(iter(entry.values()))
    ctx = _ctx(dtypes, any_tol.math, online, int(xs["x"].shape[-1]))
    out_dt = {t: _dt.canonical(getattr(ref, "dtypes", {}).get(t, dtypes.output)) for t in entry}
    res_dt = out_dt.get("residual", dtypes.output)
    if _dt.is_float(res_dt):
        ctx = replace(ctx, u_res=_dt.unit_roundoff(res_dt))
    x = xs["x"]
    ctx = replace(ctx, out=dtypes.output, inp=dtypes.input)  # a quantizer's rescale reads the input dtype

    derived = _derived_errors(opdef, inputs, params, ctx, dtypes) if opdef.derived else {}
    Es: dict[str, np.ndarray] = {}
    for t, tol in entry.items():
        if t not in exact:
            raise UsageError(f"reference for {op!r} has no output {t!r}", fix="pass the Reference computed for this op")
        y = exact[t]
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            E = derived[t] if tol.kappa == DERIVED else np.zeros_like(y) if tol.kappa == TIE_AWARE else \
                opdef.kappas[tol.kappa](x, y, params, ctx, xs)
        Es[t] = np.broadcast_to(np.asarray(E, dtype=np.float64), y.shape)
    return Errors(base={t: base[t] for t in entry}, E=Es, dtypes=out_dt, ctx=ctx)


def _ctx(dtypes: Dtypes, intr: Intrinsics, online: bool, N: int) -> Ctx:
    """The rounding context of a budget: u and eta of the accumulation dtype (eta the smallest normal where the math
    mode flushes), c_in = 1 when an input or weight dtype holds more precision than the accumulation."""
    acc = dtypes.acc
    if not _dt.is_float(acc):
        return Ctx(u=0.0, eta=0.0, c_in=0.0, intr=intr, online=online, N=N)
    fin_acc = _dt.finfo(acc)
    eta = float(fin_acc.smallest_normal) if intr.flush else float(fin_acc.smallest_subnormal)
    read = [dtypes.input] + [d for d in [getattr(dtypes, "weight", None)] if d]  # weights in their own dtype
    c_in = 1.0 if any(_dt.is_float(d) and _dt.finfo(d).nmant > fin_acc.nmant for d in read) else 0.0
    return Ctx(u=_dt.unit_roundoff(acc), eta=eta, c_in=c_in, intr=intr, online=online, N=N)


def derive(op: str, fn, dtypes: Dtypes, math_mode: str, inputs: dict, params: dict, online: bool = False) -> dict:
    """{output: (float64 value, E)} of ``fn(inputs, params)`` (a function of torch tensors, as a reference) run on
    error-carrying values in ``op``'s rounding context: a selection's scores and its values at the kernel's picks
    (verifier.judge.selection)."""
    entry = lookup(op, dtypes.output, dtypes.acc, math_mode)
    ctx = _ctx(dtypes, next(iter(entry.values())).math, online, int(np.asarray(inputs["x"]).shape[-1]))
    return _propagated(get_op(op), fn, inputs, params, ctx, dtypes)


def _derived_errors(opdef, inputs: dict, params: dict, ctx: Ctx, dtypes: Dtypes) -> dict:
    """{output: E} for an op without an error model: its reference run on error-carrying values
    (verifier.ops.derived); a function without a rule is the op's SpecError, never a guess."""
    if not callable(opdef.reference) or hasattr(opdef.reference, "float64"):
        raise SpecError(f"op {opdef.name!r} has no error model (recipe/kappas) and its reference is a module",
                        fix="give the op a reference function of torch tensors, or recipe= and kappas=")
    return {t: e for t, (_, e) in _propagated(opdef, opdef.reference, inputs, params, ctx, dtypes).items()}


def _propagated(opdef, fn, inputs: dict, params: dict, ctx: Ctx, dtypes: Dtypes) -> dict:
    from verifier.ops.derived import NoErrorRule, Rounding, no_rule_error, propagate

    arrays = {k: _dt.to_numpy(v) for k, v in inputs.items()}
    io = {role: (_dt.unit_roundoff(d), float(_dt.finfo(d).smallest_subnormal))
          for role, d in (("input", dtypes.input), ("output", dtypes.output), ("weight", dtypes.weight or dtypes.input))
          if _dt.is_float(d)}
    try:
        return propagate(fn, arrays, params, Rounding(ctx.u, ctx.eta, ctx.intr, ctx.c_in, ctx.online, io))
    except NoErrorRule as e:
        raise no_rule_error(opdef.name, str(e)) from None
    except SpecError:
        raise
    except Exception as e:  # the user's reference, run on error-carrying values
        raise SpecError(f"op {opdef.name!r}: deriving its budget, the reference raised {type(e).__name__}: {e}",
                        fix="keep the reference in torch functions of its inputs (docs/tolerances.md lists the rules), "
                            "or give the op recipe= and kappas=") from None


def table_markdown() -> str:
    """The table of docs/tolerances.md, one row per key (a test checks the doc contains it)."""
    rows = ["| op | output | accumulation | math mode | tensor: base ULPs + formula |", "|---|---|---|---|---|"]
    for (op, out, acc, mode), entry in TABLE.items():
        cell = "; ".join(f"{t}: {tol.base_ulps:g} + {tol.kappa}" for t, tol in entry.items())
        rows.append(f"| {op} | {out} | {acc} | {mode} | {cell} |")
    return "\n".join(rows) + "\n"

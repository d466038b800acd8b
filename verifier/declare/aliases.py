"""Inputs a kernel writes: outputs written over an input (``outputs_alias={"y": "x"}``: a kernel that normalizes
x in place), and inputs it may use as scratch (``scratch_inputs=("x",)``); every other input must hold the same bits
after the call (the input-clobbered check, verifier.launch.harness.clobbered).

The harness then gives the kernel one buffer for both names, holding x on entry and, when the kernel is done, y
(guard bands around it as around any output; verifier.launch.harness). The value checks compare it with the
reference of the original x. Poison cannot tell an unwritten element there (the buffer starts as x, not as a
poison), so the unwritten check asks instead whether an element still holds its input bits where the correctly
rounded result differs from them (verifier.battery.values).
"""
from __future__ import annotations

from verifier.errors import SpecError


def check_aliases(kernel: str, op, aliases, dts) -> dict:
    """``aliases`` validated against the op's tensors and every declared Dtypes (same shape, same dtype)."""
    if not aliases:
        return {}
    if not isinstance(aliases, dict):
        raise SpecError(f"kernel {kernel!r}: field 'outputs_alias' must be a dict output -> input",
                        fix="e.g. outputs_alias={'y': 'x'} for a kernel that writes y over x")
    seen, canon = set(), {}
    for out, src in aliases.items():
        where = f"kernel {kernel!r}: outputs_alias {out!r} -> {src!r}"
        src = op.other_names.get(src, src) if isinstance(src, str) else src  # v_a is merge_attn_states' x
        if out not in op.outputs or out in op.inouts:
            raise SpecError(f"{where}: {out!r} is not an output of op {op.name}",
                            fix=f"alias one of {[o for o in op.outputs if o not in op.inouts]}")
        if src not in op.inputs or src in op.inouts or src in seen:
            raise SpecError(f"{where}: {src!r} is not an input of op {op.name} that another output can take",
                            fix=f"name one of {[i for i in op.inputs if i not in op.inouts]}, each once")
        if op.shape_of(out, 3, 5) != op.shape_of(src, 3, 5):
            raise SpecError(f"{where}: the two have different shapes", fix="alias tensors of one shape")
        for dt in dts:  # the output's own dtype: a float32 lse beside bf16 values is float32 in every variant
            if op.output_dtype(out, dt) != op.input_dtype(src, dt):
                raise SpecError(f"{where}: dtypes {dt.tag} give {out!r} in {op.output_dtype(out, dt)} but {src!r} in "
                                f"{op.input_dtype(src, dt)}", fix="an output written over an input has its dtype")
        seen.add(src)
        canon[out] = src
    return canon


def check_scratch(kernel: str, op, names, aliases) -> tuple:
    """``scratch_inputs`` validated: names of the op's inputs (not in-out tensors, not written over by an output:
    those are outputs already), each once."""
    if isinstance(names, str):
        names = (names,)
    if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
        raise SpecError(f"kernel {kernel!r}: field 'scratch_inputs' must be a tuple of input names",
                        fix="e.g. scratch_inputs=('x',) for a kernel that may overwrite x")
    allowed = [i for i in op.inputs if i not in op.inouts and i not in aliases.values()]
    names = tuple(op.other_names.get(n, n) for n in names)  # the op's own names (v_a is merge_attn_states' x)
    for n in names:
        if n not in allowed or list(names).count(n) > 1:
            raise SpecError(f"kernel {kernel!r}: scratch_inputs names {n!r}, not an input of op {op.name} the kernel "
                            "only reads" + (" (named twice)" if n in allowed else ""),
                            fix=f"name some of {allowed}, each once (an in-out tensor or an aliased input is an "
                                "output already)")
    return tuple(names)


def aliased_inputs(spec) -> dict:
    """input -> the output written over it."""
    return {src: out for out, src in getattr(spec, "outputs_alias", {}).items()}


def buffer_of(spec, name: str) -> str:
    """The tensor whose buffer holds ``name`` in the harness: an input an output is written over lies in that
    output's buffer, at its row stride (one stride, bound to whichever of the two names a launch passes); any other
    tensor in its own."""
    over = {src: out for out, src in getattr(spec, "outputs_alias", {}).items()}
    return over.get(name, name)

"""Judging a kernel that flushes subnormals (declared or inferred ``subnormals="flush"``,
verifier.declare.contracts): its output against the reference of the flushed inputs, flushed.

Apart from verifier.declare.contracts because it needs the reference, the budget and the invariants, which need the
spec model, which re-exports Contracts: kept in contracts.py, it made an import cycle."""
from __future__ import annotations

from dataclasses import replace

from verifier.judge import invariants as _inv
from verifier.judge import tolerance as _tol
from verifier.judge.compare import compare
from verifier.declare.contracts import flush, has_subnormals


def flushed_reference(ref):
    """A Reference whose outputs are flushed as the kernel's would be."""
    rounded = {k: flush(v) for k, v in ref.rounded.items()}
    exact = {k: flush(v) for k, v in ref.exact.items()}
    return replace(ref, rounded=rounded, exact=exact)


def judge_flushed(spec, dt, xs: dict, outputs: dict, params: dict):
    """(comparison, violations) of ``outputs`` judged as a flushing kernel's: the reference of the
    flushed inputs, flushed, against the flushed outputs. None when nothing is subnormal."""
    if not has_subnormals(list(xs.values()) + list(outputs.values())):
        return None
    from references import reference  # mpmath: imported when a flushing kernel needs it

    fx = {k: flush(v) for k, v in xs.items()}
    fout = {k: flush(v) for k, v in outputs.items()}
    ref = flushed_reference(reference(spec.op, fx, params, dt.output))
    budget = _tol.budget(spec.op, dt, spec.math_mode, fx, ref, params, overrides=spec.tolerance, online=spec.online)
    comparison = compare(fout, ref, budget, dt.output)
    violations = _inv.check(spec.op, fx, fout, dt, params, math_mode=spec.math_mode,
                            online=spec.online)
    return comparison, violations

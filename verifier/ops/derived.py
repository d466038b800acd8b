"""The budget of an op nobody wrote an error model for: forward error bounds propagated through its reference.

The op's float64 reference (a function of torch tensors) is run once more on ``Bounded`` values: each carries the
float64 value ``v`` and an absolute bound ``e`` on the error a kernel computing the same expression in the
accumulation dtype may have made. Every operation applies a first-order-safe rule (docs/tolerances.md, "Ops without
an error model"): with u the accumulation dtype's unit roundoff, eta its underflow error and the math mode's
intrinsic constants (verifier.numerics.errmodel.Intrinsics, in units of u),

    a ± b        e_a + e_b + u·|r|
    a · b        |a|·e_b + |b|·e_a + e_a·e_b + u·|r| + eta
    a / b        (e_a + |r|·e_b) / (|b| - e_b) + div·u·|r| + eta          (inf once |b| <= e_b)
    f(a)         max |f(a ± e_a) - f(a)| + c_f·u·|r| (+ eta)   f monotone: exp, log, sqrt, rsqrt, tanh, sigmoid, pow
    sum of n     Σ e_i + gamma(m - 1)·Σ|a_i|                    any summation order (Higham, Lemma 3.1); m: the
                                                                 terms not exactly 0 (adding 0 is exact)
    max, min     max e_i                                         1-Lipschitz in the max norm; abs, neg, clamp exact
    shape ops    the same op on v and e                          reshape, index, gather, cat, expand, ...

so cancellation (a - b with |a - b| << |a|) keeps the absolute error of a and b while the result shrinks: the budget
in output ULPs grows exactly where a kernel's error does. softmax, log_softmax, logsumexp, var, std, norm and matmul
are expanded into these rules in the order kernels compute them (the row max subtracted first). Inputs are exact
(held in the accumulation dtype) unless their dtype has more precision (then u·|x|); float constants carry their
rounding, u·|c|. Comparisons (``>``, ``where``'s condition, ``argmax``) are taken from the float64 value: an element
whose decision a kernel's error could flip is not widened (document such ops' semantics, or give an error model).

A torch function without a rule raises ``NoErrorRule``; the budget then refuses to guess (SpecError: the kernel's
error, naming the function and the fix) rather than pass or flag anything.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from verifier.errors import SpecError
from verifier.ops import error_rules  # noqa: F401 (installs the rules Bounded values dispatch to)
from verifier.ops.bounded import Bounded, NoErrorRule, Rounding, f64 as _f64

__all__ = ["NoErrorRule", "Rounding", "no_rule_error", "propagate"]


def propagate(reference: Callable, inputs: dict, params: dict, r: Rounding) -> dict:
    """{output: (value, error bound)} as float64 numpy arrays: the reference run on Bounded inputs."""
    bounded = {}
    for k, a in inputs.items():
        arr = np.asarray(a)
        if arr.dtype.kind in "iub":
            bounded[k] = torch.as_tensor(arr.astype(np.int64))
        else:
            v = torch.as_tensor(np.asarray(arr, dtype=np.float64))
            bounded[k] = Bounded(v, r.c_in * r.u * v.abs(), r)
    with torch.no_grad():
        out = reference(bounded, dict(params))
    if not isinstance(out, dict):
        raise NoErrorRule(f"the reference returned {type(out).__name__}, not a dict of outputs")
    res = {}
    for k, t in out.items():
        if isinstance(t, Bounded):
            res[k] = (t.v.numpy(), t.e.numpy())
        elif isinstance(t, torch.Tensor) and not t.is_floating_point():
            res[k] = (_f64(t).numpy(), np.zeros(tuple(t.shape)))
        else:
            raise NoErrorRule(f"output {k!r} does not come from the inputs (a {type(t).__name__})")
    return res


def no_rule_error(op_name: str, what: str) -> SpecError:
    return SpecError(
        f"op {op_name!r}: its reference uses {what}, for which kernel-verifier has no error rule, so no budget can be "
        "derived for it",
        fix="write the reference with the functions docs/tolerances.md lists (add, mul, div, exp, log, sqrt, rsqrt, "
            "sum, mean, amax, softmax, logsumexp, where, gather, ...), or give the op a hand error model "
            "(Op(..., recipe={...}, kappas={...}))")

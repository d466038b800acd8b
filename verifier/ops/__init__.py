"""The op registry: the bundled ops, one module each (every fact about an op in its module's OPDEF, declared with the
public ``Op`` constructor of verifier.ops.model, as a spec file would), and the ops users declare in their spec
files, registered when a kernel names them.

===================  =======================  ==========================  =====================
op                   inputs                   outputs                     params
===================  =======================  ==========================  =====================
softmax              x[M,N]                   y[M,N]                      -
log_softmax          x[M,N]                   y[M,N]                      -
online_softmax_stats x[M,N]                   m[M], l[M]                  -
rmsnorm              x[M,N], w[N]             y[M,N]                      eps=1e-6, offset=0
layernorm            x[M,N], w[N], b[N]       y[M,N]                      eps=1e-5
fused_add_rmsnorm    x[M,N], residual[M,N],   y[M,N], residual[M,N]       eps=1e-6, offset=0
                     w[N]                     (residual updated in place)
reduce_sum           x[M,N]                   y[M]                        -
cross_entropy        x[M,N], labels[M] (int)  loss[M]                     ignore_index=-100,
                                                                          label_dtype='int64'
===================  =======================  ==========================  =====================

Quantized outputs (verifier/ops/quant.py): per_token_quant x[M,N] -> y[M,N] (e4m3 / e5m2 / int8), scale[M] float32
(floor=1e-10, qmax, rounding); rmsnorm_quant x[M,N], w[N], scale[1] -> y[M,N] (eps, offset, round_normed, rounding); rmsnorm_dynamic_quant
x[M,N], w[N] -> y[M,N], scale[M]; fused_add_rmsnorm_quant x, residual (in place), w, scale[1] -> y, residual.

Inputs and weights are in the kernel's input dtype (labels in their role's integer dtype); outputs
in its output dtype. ``verifier ops`` lists every registered op with its tensors and params.
"""
from __future__ import annotations

from verifier.errors import SpecError
from verifier.ops import (
    cross_entropy,
    fused_add_rmsnorm,
    layernorm,
    log_softmax,
    online_softmax_stats,
    reduce_sum,
    rmsnorm,
    softmax,
)
from verifier.ops import quant
from verifier.ops.model import Invariant, Op, OpCase, Role, Tensor, lookup_op

__all__ = ["BUNDLED", "OPS", "Invariant", "Op", "OpCase", "OpDef", "Role", "Tensor", "get_op", "register"]

OpDef = Op  # the older name

BUNDLED: tuple = (softmax.OPDEF, log_softmax.OPDEF, online_softmax_stats.OPDEF, rmsnorm.OPDEF, layernorm.OPDEF,
                  fused_add_rmsnorm.OPDEF, reduce_sum.OPDEF, cross_entropy.OPDEF)
BUNDLED += (quant.PER_TOKEN_QUANT, quant.RMSNORM_QUANT, quant.RMSNORM_DYNAMIC_QUANT,  # quantized outputs (issue 37)
            quant.FUSED_ADD_RMSNORM_QUANT)
OPS: dict[str, Op] = {op.name: op for op in BUNDLED}


def register(op: Op) -> Op:
    """Add a user's op to the registry (a kernel naming it calls this). The same declaration loaded again (a spec
    file re-imported in a child process, or by a second kernel) replaces itself; another op of the same name, or a
    bundled op's name, is a SpecError naming both declarations."""
    if not isinstance(op, Op):
        raise SpecError(f"op {op!r} is not an Op", fix="declare it with verifier.spec.Op(...)")
    have = OPS.get(op.name)
    if have is not None and have is not op:
        if any(b is have for b in BUNDLED) or have.origin != op.origin:
            raise SpecError(f"op {op.name!r} declared at {op.origin} is already declared at {have.origin}",
                            fix="give your op another name (bundled ops: " + ", ".join(b.name for b in BUNDLED) + ")")
    OPS[op.name] = op
    return op


def get_op(name: str) -> Op:
    return lookup_op(OPS, name)

"""The ops the framework knows, one module each; every fact about an op lives in its module's OPDEF.

===================  =======================  ==========================  =====================
op                   inputs                   outputs                     params
===================  =======================  ==========================  =====================
softmax              x[M,N]                   y[M,N]                      -
log_softmax          x[M,N]                   y[M,N]                      -
online_softmax_stats x[M,N]                   m[M], l[M]                  -
rmsnorm              x[M,N], w[N]             y[M,N]                      eps=1e-6
layernorm            x[M,N], w[N], b[N]       y[M,N]                      eps=1e-5
fused_add_rmsnorm    x[M,N], residual[M,N],   y[M,N], residual[M,N]       eps=1e-6
                     w[N]                     (residual updated in place)
reduce_sum           x[M,N]                   y[M]                        -
cross_entropy        x[M,N], labels[M] (int)  loss[M] (float32)           ignore_index=-100,
                                                                          label_dtype='int64'
===================  =======================  ==========================  =====================

Inputs and weights are in the kernel's input dtype (labels in their role's integer dtype); outputs
in its output dtype. Adding an op = one module here (its OpDef) + its reference in references/.
"""
from __future__ import annotations

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
from verifier.ops._def import OpCase, OpDef, Role, lookup_op, registry

__all__ = ["OPS", "OpCase", "OpDef", "Role", "get_op"]

OPS: dict[str, OpDef] = registry(
    softmax.OPDEF, log_softmax.OPDEF, online_softmax_stats.OPDEF, rmsnorm.OPDEF, layernorm.OPDEF,
    fused_add_rmsnorm.OPDEF, reduce_sum.OPDEF, cross_entropy.OPDEF,
)


def get_op(name: str) -> OpDef:
    return lookup_op(OPS, name)

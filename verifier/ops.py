"""The ops the framework knows: which tensors each reads and writes, and default parameters.

Every op works on a batch of rows: shape ``(M, N)`` = M rows of length N. Tensor roles:

===================  =======================  ==========================  ===========
op                   inputs                   outputs                     params
===================  =======================  ==========================  ===========
softmax              x[M,N]                   y[M,N]                      -
log_softmax          x[M,N]                   y[M,N]                      -
online_softmax_stats x[M,N]                   m[M], l[M]                  -
rmsnorm              x[M,N], w[N]             y[M,N]                      eps=1e-6
layernorm            x[M,N], w[N], b[N]       y[M,N]                      eps=1e-5
fused_add_rmsnorm    x[M,N], residual[M,N],   y[M,N], residual[M,N]       eps=1e-6
                     w[N]                     (residual updated in place)
reduce_sum           x[M,N]                   y[M]                        -
===================  =======================  ==========================  ===========

Inputs and weights are in the kernel's input dtype; outputs in its output dtype.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from verifier.errors import UsageError


@dataclass(frozen=True)
class OpDef:
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    inouts: tuple[str, ...] = ()
    params: dict = field(default_factory=dict)
    row_outputs: tuple[str, ...] = ()  # outputs of shape [M] rather than [M, N]
    vector_inputs: tuple[str, ...] = ()  # inputs of shape [N]

    def shape_of(self, tensor: str, M: int, N: int) -> tuple[int, ...]:
        if tensor in self.row_outputs:
            return (M,)
        if tensor in self.vector_inputs:
            return (N,)
        return (M, N)

    def tensors(self) -> tuple[str, ...]:
        seen = []
        for t in self.inputs + self.outputs:
            if t not in seen:
                seen.append(t)
        return tuple(seen)


OPS: dict[str, OpDef] = {
    op.name: op
    for op in (
        OpDef("softmax", ("x",), ("y",)),
        OpDef("log_softmax", ("x",), ("y",)),
        OpDef("online_softmax_stats", ("x",), ("m", "l"), row_outputs=("m", "l")),
        OpDef("rmsnorm", ("x", "w"), ("y",), params={"eps": 1e-6}, vector_inputs=("w",)),
        OpDef("layernorm", ("x", "w", "b"), ("y",), params={"eps": 1e-5}, vector_inputs=("w", "b")),
        OpDef(
            "fused_add_rmsnorm",
            ("x", "residual", "w"),
            ("y", "residual"),
            inouts=("residual",),
            params={"eps": 1e-6},
            vector_inputs=("w",),
        ),
        OpDef("reduce_sum", ("x",), ("y",), row_outputs=("y",)),
    )
}


def get_op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise UsageError(f"unknown op {name!r}", fix=f"use one of {', '.join(OPS)}") from None

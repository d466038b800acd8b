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
                                                                          label_smoothing=0, z_loss=0,
                                                                          softcap=0
cross_entropy_reduced x[M,N], labels[M] (int) loss[1]                     as cross_entropy,
                                                                          reduction='mean' ('sum')
cross_entropy_soft   x[M,N], target[M,N]      loss[M]                     label_smoothing, z_loss,
                                                                          softcap, zero_target='zero'
cross_entropy_soft_reduced x[M,N],            loss[1]                     as cross_entropy_soft,
                     target[M,N]                                          reduction='mean' ('sum')
topk_softmax         x[M,E] (gating logits)   values[M,k] (float32),      k=8, renormalize=False,
                                              indices[M,k] (int32/int64)  gate='softmax', index_dtype='int32'
merge_attn_states    x[M,N] (v_a), lse_a[M],  v[M,N], lse[M] (float32)   lse_base='e', empty='nan'
                     v_b[M,N], lse_b[M]
group_norm           x[M,N], w[C], b[C]       y[M,N]                      groups=4, channels=8,
                                                                          eps=1e-5
group_norm_noaffine  x[M,N]                   y[M,N]                      groups=4, channels=8,
                                                                          eps=1e-5
row_amax             x[M,N]                   y[M]                        -
row_mean             x[M,N]                   y[M]                        -
var_mean             x[M,N]                   var[M], mean[M]             correction=1
l2norm               x[M,N]                   y[M,N]                      eps=1e-12
rmsnorm_noweight     x[M,N]                   y[M,N]                      eps=1e-6
layernorm_noweight   x[M,N]                   y[M,N]                      eps=1e-5
layernorm_bias       x[M,N], b[N]             y[M,N]                      eps=1e-5
group_rmsnorm        x[M,N], w[N]             y[M,N]                      groups=4, eps=1e-6
group_layernorm      x[M,N], w[N], b[N] (opt) y[M,N]                      groups=4, eps=1e-5, b=None
===================  =======================  ==========================  =====================

softmax, log_softmax and online_softmax_stats also take attention's score transforms (verifier.ops.softmax_inputs):
params scale, softcap, causal, causal_offset, q_len (and masked_rows, a contract, for the first two) and the optional
inputs mask[M,N] / mask[N], alibi_slopes[M], sinks[M], present in a kernel's variant of the op (``Op.variant``).

cross_entropy, cross_entropy_reduced and cross_entropy_soft also take scale=1: the logits x·scale first, before the
softcap (flash-attn's logit_scale, Unsloth's logit_scaling).

Quantized outputs (verifier/ops/quant.py): per_token_quant x[M,N] -> y[M,N] (e4m3 / e5m2 / int8), scale[M] float32
(floor=1e-10, qmax, rounding); rmsnorm_quant x[M,N], w[N], scale[1] -> y[M,N] (eps, offset, round_normed, rounding); rmsnorm_dynamic_quant
x[M,N], w[N] -> y[M,N], scale[M]; fused_add_rmsnorm_quant x, residual (in place), w, scale[1] -> y, residual.
per_token_group_quant (verifier/ops/group_quant.py): x[M,N] -> y[M,N], scale[M, N/group_size] float32 (group_size=128,
floor, qmax, rounding), one scale per group of group_size consecutive elements of a row.

logsumexp (verifier/ops/logsumexp.py): x[M,N] -> lse[M] float32, the softmax family's lse alone (its params and
optional inputs, lse_base, the lse_nonfinite contract).

MoE routing's dense combine weights (verifier/ops/topk_dense.py): topk_softmax_dense x[M,E] -> weights[M,E] float32,
topk_softmax's gates at the k picks (renormalized, scaled), 0 elsewhere; judged tie-aware off the nonzero set.

Sampling's top-k filters (verifier/ops/top_k_sampling.py): top_k_renorm_probs x[M,N] (probs) -> renormed[M,N] (k=8,
ties='keep_all' or 'exactly_k', sum_floor=0); top_k_mask_logits x[M,N] (logits) -> masked[M,N] (k, ties).

Greedy sampling (verifier/ops/row_argmax.py): row_argmax x[M,N] -> index[M] (index_dtype='int64' or 'int32'), optional
value[M] (value=True); ties='first' (torch.argmax) or 'any', neg_inf_rows (contract: 'first' or 'minus_one');
judged exactly, NaN the maximum.

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
    merge_attn_states,
    online_softmax_stats,
    reduce_sum,
    rmsnorm,
    softmax,
    topk_softmax,
)
from verifier.ops import quant
from verifier.ops import group_quant  # per_token_group_quant (production quantizers: vLLM, SGLang)
from verifier.ops import top_k_sampling  # sampling's top-k filters (issue #37, FlashInfer's sampling top-k)
from verifier.ops import group_norm, l2norm, row_amax, row_mean, var_mean, weightless  # issue #37, norm variants
from verifier.ops import group_hidden  # norms over groups of the hidden dim (production norm variants)
from verifier.ops import topk_dense  # MoE routing's dense combine weights (GShard / Switch / DeepSpeed)
from verifier.ops import logsumexp  # the softmax family's lse alone (verifier/ops/logsumexp.py)
from verifier.ops import row_argmax  # each row's argmax: greedy sampling (verifier/ops/row_argmax.py)
from verifier.ops import cross_entropy_soft_reduced  # timm's SoftTargetCrossEntropy, PyTorch's mean over soft labels
from verifier.ops.model import Invariant, Op, OpCase, Role, Selection, Tensor, lookup_op  # noqa: F401

__all__ = ["BUNDLED", "OPS", "variant_for", "Invariant", "Op", "OpCase", "OpDef", "Role", "Tensor", "get_op",
           "register"]

OpDef = Op  # the older name

BUNDLED: tuple = (softmax.OPDEF, log_softmax.OPDEF, online_softmax_stats.OPDEF, rmsnorm.OPDEF, layernorm.OPDEF,
                  fused_add_rmsnorm.OPDEF, reduce_sum.OPDEF, cross_entropy.OPDEF)
BUNDLED += (topk_softmax.OPDEF, merge_attn_states.OPDEF)
BUNDLED += (cross_entropy.REDUCED, cross_entropy.SOFT)  # over the batch ('mean' / 'sum'); soft labels
# issue #37, norm variants (verifier/ops/group_norm.py, row_amax.py, row_mean.py, var_mean.py, l2norm.py)
BUNDLED += (group_norm.OPDEF, group_norm.NOAFFINE, row_amax.OPDEF, row_mean.OPDEF, var_mean.OPDEF, l2norm.OPDEF,
            weightless.RMSNORM_NOWEIGHT, weightless.LAYERNORM_NOWEIGHT, weightless.LAYERNORM_BIAS)
BUNDLED += (quant.PER_TOKEN_QUANT, quant.RMSNORM_QUANT, quant.RMSNORM_DYNAMIC_QUANT,  # quantized outputs (issue 37)
            quant.FUSED_ADD_RMSNORM_QUANT)
# norms over groups of the hidden dim, weight per column (verifier/ops/group_hidden.py: FLA's GroupNorm, Mamba-2's
# group_size)
BUNDLED += (group_hidden.GROUP_RMSNORM, group_hidden.GROUP_LAYERNORM)
BUNDLED += (group_quant.PER_TOKEN_GROUP_QUANT,)  # one scale per group of a row (verifier/ops/group_quant.py)
BUNDLED += (top_k_sampling.RENORM, top_k_sampling.MASK)  # sampling's top-k filters (verifier/ops/top_k_sampling.py)
BUNDLED += (topk_dense.OPDEF,)  # routing's dense [M, E] combine weights (verifier/ops/topk_dense.py)
BUNDLED += (logsumexp.OPDEF,)  # the row's log-sum-exp alone, float32 (verifier/ops/logsumexp.py)
BUNDLED += (row_argmax.OPDEF,)  # each row's argmax, exact and tie-aware (verifier/ops/row_argmax.py)
BUNDLED += (cross_entropy_soft_reduced.OPDEF,)  # soft labels over the batch (verifier/ops/cross_entropy_soft_reduced.py)


class _Registry(dict):
    """name -> Op. Iterating it gives the declared ops; an op's variants (``Op.variant``: the tensors a kernel with
    optional inputs sees) are found by name too, registered by the kernel that declares them (``variant_for``)."""

    variants: dict = {}

    def __missing__(self, name):
        if name not in self.variants and isinstance(name, str) and name.endswith("]") and "[" in name:
            base, _, tags = name[:-1].partition("[")  # 'softmax[mask:N,sinks]', as Op.variant names it
            if dict.__contains__(self, base) and tags:
                # 'mask:N' takes mask of shape N, 'lse' writes lse, '-lse' does not (an output written by default)
                params = dict((t[1:], False) if t.startswith("-") else (t.partition(":")[0], t.partition(":")[2] or True)
                              for t in tags.split(","))
                op = dict.__getitem__(self, base)
                if set(params) <= set(op.optional) | set(op.optional_outputs):
                    variant_for(base, params)
        return self.variants[name]

    def __contains__(self, name):
        try:
            self[name]
        except KeyError:
            return False
        return True

    def get(self, name, default=None):
        return self[name] if name in self else default


OPS: dict[str, Op] = _Registry({op.name: op for op in BUNDLED})


def variant_for(name: str, params: dict) -> str:
    """The name of the op a kernel of op ``name`` with ``params`` sees (its optional inputs resolved), registered."""
    v = OPS[name].variant(params)
    if v.name != name:
        OPS.variants[v.name] = v
    return v.name


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
    for k in [k for k, v in OPS.variants.items() if v.base == op.name]:  # declared again: its variants go stale
        del OPS.variants[k]
    return op


def get_op(name: str) -> Op:
    return lookup_op(OPS, name)

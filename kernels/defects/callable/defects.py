"""Callable defect catalogue: kernels written as Python callables (torch on the CPU) whose defect is a
promise the author never declared, or a precision pitfall (truncating casts, an intermediate in bf16, a cancelling
variance). Each is caught with default contracts; its twin is the same function with the contract declared
(verifier.spec.Contracts) or the pitfall fixed, and passes. Runs on any machine.

Named defects.py, not spec.py, on purpose: `verifier check kernels/` must not pick these up (they fail by
design). Check one explicitly: `verifier check kernels/defects/callable/defects.py --kernel NAME`.
"""
import torch

from verifier.spec import CallableKernel, Contracts, dtypes

F32_TINY = torch.finfo(torch.float32).tiny


def _softmax_nan_as_masked(inputs, outputs, params, dt):
    """Softmax that treats a NaN input like a -inf mask entry: the row stays finite, the NaN is swallowed."""
    x = inputs["x"].float()
    x = torch.where(torch.isnan(x), torch.full_like(x, float("-inf")), x)
    outputs["y"].copy_(torch.softmax(x, dim=-1))


def _ftz(t):
    """What -ftz=true does to float32 values: subnormals become zero of the same sign."""
    return torch.where(t.abs() < F32_TINY, t * 0.0, t)


def _sum_ftz(inputs, outputs, params, dt):
    """Row sum as a kernel built with -ftz=true computes it: subnormal inputs and results flushed."""
    outputs["y"].copy_(_ftz(_ftz(inputs["x"].float()).sum(dim=-1, dtype=torch.float32)))


def _truncate_bf16(t):
    """float32 -> bfloat16 by dropping the low 16 bits (truncation toward zero), as a hand-written cast does."""
    return (t.float().view(torch.int32) & ~0xFFFF).view(torch.float32).to(torch.bfloat16)


def _fused_add_rmsnorm(to_out):
    """vLLM-style fused add + RMSNorm in fp32, converting the residual and y to the I/O dtype with ``to_out``."""
    def fn(inputs, outputs, params, dt):
        h = inputs["x"].float() + inputs["residual"].float()
        r = torch.rsqrt((h * h).mean(-1, keepdim=True) + params["eps"])
        outputs["residual"].copy_(to_out(h))
        outputs["y"].copy_(to_out(h * r * inputs["w"].float()))
    return fn


def _gemma_rmsnorm(offset_in_io_dtype):
    """Gemma RMSNorm y = x·r·(1 + w), fp32 statistics; the defect forms 1 + w in the weight's bf16."""
    def fn(inputs, outputs, params, dt):
        x, w = inputs["x"].float(), inputs["w"]
        r = torch.rsqrt((x * x).mean(-1, keepdim=True) + params["eps"])
        scale = (w + params["offset"]).float() if offset_in_io_dtype else w.float() + params["offset"]
        outputs["y"].copy_(x * r * scale)
    return fn


def _layernorm(naive):
    """LayerNorm in fp32; ``naive``: the textbook variance E[x²] - E[x]², which cancels when mean >> std."""
    def fn(inputs, outputs, params, dt):
        x = inputs["x"].float()
        mu = x.mean(-1, keepdim=True)
        if naive:
            var = ((x * x).mean(-1, keepdim=True) - mu * mu).clamp_min(0.0)
        else:
            var = ((x - mu) ** 2).mean(-1, keepdim=True)
        y = (x - mu) * torch.rsqrt(var + params["eps"]) * inputs["w"].float() + inputs["b"].float()
        outputs["y"].copy_(y)
    return fn


def _ce_soft(where_zero):
    """Cross entropy against a target distribution: -(t·log_softmax(x)).sum(-1), PyTorch's own formula, or with the
    target-0 terms taken as 0 (torch.where), so a 0 target at a -inf logit adds 0, not 0·(-inf) = NaN."""
    def fn(inputs, outputs, params, dt):
        t, lsm = inputs["target"].float(), torch.log_softmax(inputs["x"].float(), -1)
        terms = torch.where(t == 0, 0.0, t * lsm) if where_zero else t * lsm
        outputs["loss"].copy_(-terms.sum(-1))
    return fn


def _ce_soft_mean(programs_of_two=False, max_subtracted=True):
    """Soft-label cross entropy averaged over the batch (timm's SoftTargetCrossEntropy), in float32: the rows' losses
    summed and divided by M. programs_of_two: per-program partials of two rows, M // 2 programs (the last row of an
    odd batch never summed); max_subtracted=False: lse = log(sum(exp(x))) without the row max (underflows to -inf
    on logits far below zero, overflows far above)."""
    def fn(inputs, outputs, params, dt):
        x, t = inputs["x"].float(), inputs["target"].float()
        lse = torch.logsumexp(x, -1, keepdim=True) if max_subtracted else torch.log(torch.exp(x).sum(-1, keepdim=True))
        rows = torch.where(t == 0, 0.0, t * (lse - x)).sum(-1)
        M = rows.shape[0]
        total = rows[:M // 2 * 2].sum() if programs_of_two else rows.sum()
        outputs["loss"].copy_((total / M).reshape(1))
    return fn


def _grouped_topk(group_score="top2", fill=float("-inf"), weigh_with_bias=False):
    """DeepSeek-V3 routing in torch (vLLM's / SGLang's biased grouped top-k): sigmoid gates, groups scored on
    gate + bias (group_score 'top2': the sum of the two largest, 'all': of every expert, the defect), the topk_group
    best kept, the dropped groups' scores filled with ``fill`` (-inf; 0.0 the defect), top k of the rest, the gates
    there (gate + bias with ``weigh_with_bias``, the defect) renormalized, times routed_scaling_factor."""
    def fn(inputs, outputs, params, dt):
        g = torch.sigmoid(inputs["x"].float())
        choice = g + inputs["bias"].float()
        M, E = choice.shape
        n, tg = params["n_group"], params["topk_group"]
        grouped = choice.view(M, n, E // n)
        gs = grouped.topk(2, dim=-1)[0].sum(-1) if group_score == "top2" else grouped.sum(-1)
        keep = torch.zeros_like(gs).scatter(1, torch.topk(gs, tg, dim=-1, sorted=False)[1], 1.0)
        kept = keep.bool().repeat_interleave(E // n, dim=-1)
        idx = torch.topk(choice.masked_fill(~kept, fill), params["k"], dim=-1, sorted=False)[1]
        w = (choice if weigh_with_bias else g).gather(1, idx)
        w = w / w.sum(-1, keepdim=True) * params["scaling"]
        outputs["values"].copy_(w)
        outputs["indices"].copy_(idx.to(torch.int32))
    return fn


# DeepSeek-V3's routing: E = 256 experts in 8 groups, 4 kept, k = 8, scaling 2.5
_DSV3 = {"k": 8, "gate": "sigmoid", "bias": True, "renormalize": True, "scaling": 2.5, "sorted": False,
         "n_group": 8, "topk_group": 4}


def _grouped_kernel(name, description, **mistake):
    return CallableKernel(name=name, op="topk_softmax", fn=_grouped_topk(**mistake), dtypes=[dtypes("f32")],
                          params=_DSV3, supports=lambda M, N, dt: None if N == 256 else "E = 256 only (DeepSeek-V3)",
                          contracts=Contracts(nan_inputs="unsupported"), description=description)


GROUPED_KERNELS = [
    _grouped_kernel("defect-grouped-topk-sum-all", "DeepSeek-V3 routing scoring each group by the sum of all its "
                    "experts' gate + bias instead of its top 2", group_score="all"),
    _grouped_kernel("defect-grouped-topk-fill-zero", "DeepSeek-V3 routing masking the dropped groups with 0.0 "
                    "instead of -inf (picked once every kept gate + bias is below 0)", fill=0.0),
    _grouped_kernel("defect-grouped-topk-biased-values", "DeepSeek-V3 routing weighting with gate + bias instead of "
                    "the gates", weigh_with_bias=True),
    _grouped_kernel("grouped-topk-torch", "DeepSeek-V3 routing as vLLM's torch grouped_topk composes it (twin)"),
]

_NAN_DESC = "softmax treating NaN inputs as -inf mask entries (the row stays finite)"
_FTZ_DESC = "fp32 row sum flushing subnormal inputs and outputs to zero, as -ftz=true builds do"

KERNELS = [
    CallableKernel(name="defect-softmax-swallows-nan", op="softmax", fn=_softmax_nan_as_masked,
                   dtypes=[dtypes("f32"), dtypes("bf16")], description=_NAN_DESC + "; NaN propagation not disclaimed"),
    CallableKernel(name="softmax-nan-unsupported", op="softmax", fn=_softmax_nan_as_masked,
                   dtypes=[dtypes("f32"), dtypes("bf16")], contracts=Contracts(nan_inputs="unsupported"),
                   description=_NAN_DESC + "; declared nan_inputs='unsupported' (twin)"),
    CallableKernel(name="defect-sum-flushes-subnormals", op="reduce_sum", fn=_sum_ftz, dtypes=[dtypes("f32")],
                   description=_FTZ_DESC + "; flushing not declared"),
    CallableKernel(name="sum-subnormals-flush", op="reduce_sum", fn=_sum_ftz, dtypes=[dtypes("f32")],
                   contracts=Contracts(subnormals="flush"),
                   description=_FTZ_DESC + "; declared subnormals='flush' (twin)"),
    CallableKernel(name="defect-fused-add-rmsnorm-truncates-bf16", op="fused_add_rmsnorm",
                   fn=_fused_add_rmsnorm(_truncate_bf16), dtypes=[dtypes("bf16")],
                   description="fp32 fused add + RMSNorm converting to bf16 by dropping the low 16 bits"),
    CallableKernel(name="fused-add-rmsnorm-rne-bf16", op="fused_add_rmsnorm",
                   fn=_fused_add_rmsnorm(lambda t: t.to(torch.bfloat16)), dtypes=[dtypes("bf16")],
                   description="fp32 fused add + RMSNorm rounding to bf16 to nearest even (twin)"),
    CallableKernel(name="defect-gemma-rmsnorm-offset-in-bf16", op="rmsnorm", fn=_gemma_rmsnorm(True),
                   dtypes=[dtypes("bf16")], params={"offset": 1.0},
                   description="Gemma RMSNorm adding the 1 to the bf16 weight in bf16 before the product"),
    CallableKernel(name="gemma-rmsnorm-offset-in-fp32", op="rmsnorm", fn=_gemma_rmsnorm(False),
                   dtypes=[dtypes("bf16")], params={"offset": 1.0},
                   description="Gemma RMSNorm forming 1 + w in fp32 (twin)"),
    CallableKernel(name="defect-layernorm-naive-variance", op="layernorm", fn=_layernorm(True),
                   dtypes=[dtypes("f32"), dtypes("f16"), dtypes("bf16")],
                   description="fp32 LayerNorm with the textbook variance E[x²] - E[x]²"),
    CallableKernel(name="layernorm-two-pass", op="layernorm", fn=_layernorm(False),
                   dtypes=[dtypes("f32"), dtypes("f16"), dtypes("bf16")],
                   description="fp32 LayerNorm with the two-pass variance mean((x - mean)²) (twin)"),
    CallableKernel(name="defect-ce-soft-zero-times-log-zero", op="cross_entropy_soft", fn=_ce_soft(False),
                   dtypes=[dtypes("bf16", "f32"), dtypes("f32")],
                   description="soft-label cross entropy as -(t·log_softmax(x)).sum(-1): 0·(-inf) = NaN at a masked "
                               "class, while 0·log 0 = 0 is the op's default (zero_target='zero')"),
    CallableKernel(name="ce-soft-where-zero", op="cross_entropy_soft", fn=_ce_soft(True),
                   dtypes=[dtypes("bf16", "f32"), dtypes("f32")],
                   description="soft-label cross entropy with torch.where(t == 0, 0, t·log_softmax(x)) (twin)"),
    CallableKernel(name="defect-ce-soft-mean-drops-last-row", op="cross_entropy_soft_reduced",
                   fn=_ce_soft_mean(programs_of_two=True), dtypes=[dtypes("f32")],
                   description="batch-mean soft-label cross entropy from partials of two rows per program, M // 2 "
                               "programs: an odd batch's last row is never summed"),
    CallableKernel(name="defect-ce-soft-mean-no-max", op="cross_entropy_soft_reduced",
                   fn=_ce_soft_mean(max_subtracted=False), dtypes=[dtypes("f32")],
                   description="batch-mean soft-label cross entropy with lse = log(sum(exp(x))), no row max"),
    CallableKernel(name="ce-soft-mean", op="cross_entropy_soft_reduced", fn=_ce_soft_mean(), dtypes=[dtypes("f32")],
                   description="batch-mean soft-label cross entropy: every row's loss summed, divided by M (twin)"),
    *GROUPED_KERNELS,
]

DEFECTS = {
    "defect-softmax-swallows-nan": {
        "caught_by": "nan-inf", "twin": "softmax-nan-unsupported", "device": "cpu",
        "pitfall": "NaN input swallowed (treated as a masked -inf) while the spec promises NaN propagation by "
                   "default; declare Contracts(nan_inputs='unsupported') if that is the intent",
        "exposing_input": "some_nan"},
    "defect-sum-flushes-subnormals": {
        "caught_by": "value", "twin": "sum-subnormals-flush", "device": "cpu",
        "pitfall": "subnormal inputs flushed to zero (a -ftz=true build) while the spec promises subnormals are "
                   "preserved by default; declare Contracts(subnormals='flush')",
        "exposing_input": "subnormals"},
    "defect-fused-add-rmsnorm-truncates-bf16": {
        "caught_by": "rounding", "twin": "fused-add-rmsnorm-rne-bf16", "device": "cpu",
        "pitfall": "fp32 -> bf16 by dropping the low 16 bits (truncation toward zero) instead of round-to-nearest-"
                   "even: every element within 1 ULP, but a quarter of the residual is misrounded, biased -0.27 ULP",
        "exposing_input": "normal_small"},
    "defect-gemma-rmsnorm-offset-in-bf16": {
        "caught_by": "rounding", "twin": "gemma-rmsnorm-offset-in-fp32", "device": "cpu",
        "pitfall": "Gemma RMSNorm forming 1 + w in the bf16 weight dtype before the product: within 2 ULP, but a "
                   "quarter of the outputs are not correctly rounded where fp32 rounds them all correctly",
        "exposing_input": "normal_small"},
    "defect-layernorm-naive-variance": {
        "caught_by": "value", "twin": "layernorm-two-pass", "device": "cpu",
        "pitfall": "LayerNorm variance by E[x^2] - E[x]^2 in fp32: a bf16 row of 1000s with one or two 1004s cancels "
                   "to nothing (thousands of ULP off), while bf16-rounded 1000 +- 1 rows are constant and hide it",
        "exposing_input": "cancel_ulp_bumps"},
    "defect-ce-soft-zero-times-log-zero": {
        "caught_by": "nan-inf", "twin": "ce-soft-where-zero", "device": "cpu",
        "pitfall": "soft-label cross entropy as t·log_softmax: a target 0 at a -inf (masked) logit gives 0·(-inf) = "
                   "NaN where 0·log 0 = 0 is promised (declare zero_target='nan' for PyTorch's arithmetic)",
        "exposing_input": "ce_soft_zero_at_neg_inf"},
    # soft labels averaged over the batch (op cross_entropy_soft_reduced: timm's SoftTargetCrossEntropy)
    "defect-ce-soft-mean-drops-last-row": {
        "caught_by": "value", "twin": "ce-soft-mean", "device": "cpu",
        "pitfall": "a batch mean from per-program partials of two rows sized M // 2: the last row of an odd batch is "
                   "never summed (a relative error of about 1/M, invisible on an even randn batch)",
        "exposing_input": "ce_soft_many_short_rows"},
    "defect-ce-soft-mean-no-max": {
        "caught_by": "nan-inf", "twin": "ce-soft-mean", "device": "cpu",
        "pitfall": "lse as log(sum(exp(x))) without subtracting the row max: logits far below zero underflow every "
                   "exp and the loss is infinite (far above zero they overflow)",
        "exposing_input": "ce_soft_far_below_zero"},
    # grouped MoE routing (topk_softmax n_group / topk_group; tests/test_topk_grouped.py)
    "defect-grouped-topk-sum-all": {
        "caught_by": "value", "twin": "grouped-topk-torch", "device": "cpu",
        "pitfall": "DeepSeek-V3 grouped routing scoring each group by the sum of all 32 experts' gate + bias instead "
                   "of its top 2: other groups kept, picks outside the right groups",
        "exposing_input": "topk_e256_deepseek"},
    "defect-grouped-topk-fill-zero": {
        "caught_by": "value", "twin": "grouped-topk-torch", "device": "cpu",
        "pitfall": "grouped routing filling the dropped groups with 0.0 instead of -inf: where every kept gate + bias "
                   "is below 0 (a negative correction bias) the dropped experts win",
        "exposing_input": "topk_grouped_negative_choice"},
    "defect-grouped-topk-biased-values": {
        "caught_by": "value", "twin": "grouped-topk-torch", "device": "cpu",
        "pitfall": "grouped routing weighting with gate + bias (the ranking scores) instead of the gates",
        "exposing_input": "topk_e256_deepseek"},
}


# MoE routing's dense combine weights (topk_softmax_dense; tests/test_topk_dense.py): DeepSpeed-style topkgating
def _dense_routing(threshold=False, renormalize=True):
    """Softmax gates, the top k by the logits, gates times the 0/1 mask, divided by the clamped sum. threshold: the
    mask as gates >= the k-th largest gate (every tie kept: more than k experts on a tied row); renormalize=False:
    the division left out while the spec declares renormalize=True."""
    def fn(inputs, outputs, params, dt):
        logits = inputs["x"].float()
        gates = torch.softmax(logits, dim=-1)
        top_val, top_idx = torch.topk(gates, int(params["k"]), dim=-1)
        mask = (gates >= top_val[:, -1:]).float() if threshold else torch.zeros_like(gates).scatter(-1, top_idx, 1.0)
        masked = gates * mask
        if renormalize:
            masked = masked / masked.sum(-1, keepdim=True).clamp(min=torch.finfo(torch.float32).eps)
        return {"weights": masked}
    return fn


def _dense_kernel(name, description, **mistake):
    return CallableKernel(name=name, op="topk_softmax_dense", fn=_dense_routing(**mistake), dtypes=[dtypes("f32")],
                          params={"k": 8, "renormalize": True}, description=description)


KERNELS += [
    _dense_kernel("defect-topk-dense-threshold-ties", "dense routing weights masked by gates >= the k-th largest "
                  "gate: every tie kept", threshold=True),
    _dense_kernel("defect-topk-dense-not-renormalized", "dense routing weights left unnormalized while "
                  "renormalize=True is declared", renormalize=False),
    _dense_kernel("topk-dense-deepspeed-twin", "dense routing weights as DeepSpeed's topkgating (drop_tokens=False) "
                  "computes them (twin)"),
]
DEFECTS.update({
    "defect-topk-dense-threshold-ties": {
        "caught_by": "value", "twin": "topk-dense-deepspeed-twin", "device": "cpu",
        "pitfall": "dense routing mask built as gates >= the k-th largest gate instead of from topk's indices: a row "
                   "with ties at the k-th gate routes to more than k experts (randn rows have no ties)",
        "exposing_input": "topk_exact_ties"},
    "defect-topk-dense-not-renormalized": {
        "caught_by": "value", "twin": "topk-dense-deepspeed-twin", "device": "cpu",
        "pitfall": "dense routing weights declared renormalized over the k picks but left as the plain softmax gates "
                   "(the division by their sum forgotten): weights summing to well below 1",
        "exposing_input": "normal_small"},
})

"""Triton defect catalogue: each kernel reproduces one known pitfall (DEFECTS says which, which check
class catches it, on which input, and its correct twin). Runs on CPU in the Triton interpreter.

Named defects.py, not spec.py, on purpose: `verifier check kernels/` must not pick these up (they
fail by design). Check one explicitly: `verifier check kernels/defects/triton/defects.py --kernel NAME`.
Twins written here (same module, the defect switched off) are in KERNELS too; the others are the
bundled kernels in kernels/triton/spec.py.
"""
from verifier.spec import FLOAT_IO, Expectations, TritonKernel, dtypes, max_row, register_resident

_DET = Expectations(deterministic=True)


def _t(name, op, module, launcher, description, dts=FLOAT_IO, supports=None, expectations=_DET):
    kw = {"supports": supports} if supports else {}
    return TritonKernel(name=name, op=op, module=module, launcher=launcher, dtypes=dts, math_mode="triton_approx",
                        expectations=expectations, description=description, **kw)


_ONE_BLOCK = max_row(65536, "triton-online-softmax")
_WARP = max_row(4096, "triton-online-softmax")
_TILE64 = max_row(65536, "triton-online-softmax (4096-column tiles)")
_ONE_ROW = max_row(65536, None, what="the one-block limit")
BF16 = [dtypes("bf16")]
LS_DTS = [dtypes("f32"), dtypes("bf16")]
_ROUTE_IO = [dtypes("f32"), dtypes("bf16", "f32")]  # routing: logits f32 / bf16, values f32

KERNELS = [
    TritonKernel(name="defect-triton-ce-no-max-sub", op="cross_entropy", module="cross_entropy_defects.py",
                 launcher="launch_no_max_sub", dtypes=[dtypes(d.input, "f32") for d in FLOAT_IO],
                 math_mode="triton_approx", online=True, expectations=_DET,
                 description="cross entropy with lse = log(sum(exp(x))), no max subtraction"),
    TritonKernel(name="defect-triton-ce-labels-as-int32", op="cross_entropy", module="cross_entropy_defects.py",
                 launcher="launch_labels_as_int32", dtypes=[dtypes(d, "f32") for d in ("f32", "bf16")],
                 math_mode="triton_approx", online=True, expectations=_DET,
                 description="cross entropy reading the int64 label buffer as int32 (row i takes word i)"),
    _t("defect-triton-softmax-no-max-sub", "softmax", "softmax_defects.py", "launch_no_max_sub",
       "softmax as exp(x) / sum(exp(x)), no max subtraction", supports=_ONE_BLOCK),
    _t("defect-triton-softmax-unmasked-store", "softmax", "softmax_defects.py", "launch_unmasked_store",
       "softmax whose 128-column store tiles are not masked: the last tile writes past the row end", supports=_ONE_BLOCK),
    _t("defect-triton-softmax-masked-row-zeros", "softmax", "softmax_defects.py", "launch_masked_rows_zero",
       "fully -inf row returns zeros instead of NaN", supports=_ONE_BLOCK),
    _t("triton-online-softmax-tile64", "softmax", "online_softmax_defects.py", "launch",
       "online softmax over 64-column tiles with the rescale (twin)", supports=_TILE64,
       expectations=register_resident()),
    _t("defect-triton-online-softmax-no-rescale", "softmax", "online_softmax_defects.py", "launch_no_rescale",
       "online softmax over 64-column tiles, old sum not rescaled when the max grows", supports=_TILE64,
       expectations=register_resident()),
    _t("triton-warp-online-softmax", "softmax", "warp_softmax_defects.py", "launch",
       "warp-per-row online softmax, lane by lane, both -inf guards (twin)", supports=_WARP),
    _t("defect-triton-warp-softmax-no-merge-guard", "softmax", "warp_softmax_defects.py", "launch_no_merge_guard",
       "warp-per-row online softmax whose (m, l) merge has no empty-lane guard", supports=_WARP),
    _t("defect-triton-warp-softmax-no-update-guard", "softmax", "warp_softmax_defects.py", "launch_no_update_guard",
       "warp-per-row online softmax whose per-element update has no -inf guard", supports=_WARP),
    _t("defect-triton-layernorm-naive-variance", "layernorm", "norm_defects.py", "launch_layernorm_naive_var",
       "LayerNorm with var = E[x^2] - E[x]^2", supports=max_row(65536, "a tiled LayerNorm")),
    _t("triton-rmsnorm-tiled", "rmsnorm", "norm_defects.py", "launch_rmsnorm_tiled",
       "RMSNorm over 256-column tiles, per-lane fp32 sums of squares (twin)"),
    _t("defect-triton-rmsnorm-io-dtype-acc", "rmsnorm", "norm_defects.py", "launch_rmsnorm_io_acc",
       "RMSNorm over 256-column tiles, per-lane sums of squares kept in f16/bf16",
       dts=[dtypes("f16"), dtypes("bf16")]),
    _t("defect-triton-rmsnorm-capped-block", "rmsnorm", "norm_defects.py", "launch_rmsnorm_capped",
       "RMSNorm with the block capped at 16384 columns and no loop, accepting any N"),
    # input_defects.py: what only callers' inputs expose (strided rows, more than 2^31 elements, log-domain extremes)
    _t("triton-rmsnorm-rows", "rmsnorm", "input_defects.py", "launch_rows",
       "RMSNorm, one program per row, int64 row offsets at the row strides (twin)", dts=BF16, supports=_ONE_ROW),
    _t("defect-triton-rmsnorm-int32-row-offset", "rmsnorm", "input_defects.py", "launch_int32_row_offset",
       "RMSNorm whose row offset tl.program_id(0) * stride stays in int32", dts=BF16, supports=_ONE_ROW),
    _t("defect-triton-rmsnorm-ignores-row-stride", "rmsnorm", "input_defects.py", "launch_ignores_stride",
       "RMSNorm reading and writing row r at r * N, whatever the row stride", dts=BF16, supports=_ONE_ROW),
    _t("triton-log-softmax", "log_softmax", "input_defects.py", "launch_log_softmax",
       "log_softmax, one program per row, (x - m) - log(sum(exp(x - m))) (twin)", dts=LS_DTS, supports=_ONE_ROW),
    _t("defect-triton-log-softmax-exp-then-log", "log_softmax", "input_defects.py", "launch_log_softmax_exp_log",
       "log_softmax as log(exp(x - m) / s)", dts=LS_DTS, supports=_ONE_ROW),
    TritonKernel(name="defect-triton-ce-neg-log-softmax", op="cross_entropy", module="input_defects.py",
                 launcher="launch_ce_neg_log_p", dtypes=[dtypes(d.input, "f32") for d in FLOAT_IO],
                 math_mode="triton_approx", online=True, expectations=_DET,
                 description="cross entropy as -log(softmax(x)[label]), online max/sum over 4096-column tiles"),
    _t("defect-triton-fused-add-rmsnorm-truncates-bf16", "fused_add_rmsnorm", "rounding_defects.py",
       "launch_truncating", "fused add + RMSNorm converting fp32 to bf16 by clearing the low 16 bits", dts=BF16,
       supports=max_row(16384, None, what="one block's registers")),
    # softmax with extra inputs (twin: triton-masked-softmax, kernels/triton/masked_softmax_spec.py)
    *(TritonKernel(name=n, op="softmax", module="masked_softmax_defects.py", launcher=fn, dtypes=LS_DTS,
                   math_mode="triton_approx", expectations=_DET, supports=_ONE_ROW, description=d,
                   params={"scale": 0.125, "mask": "MxN", "causal": True, "masked_rows": "zeros"})
      for n, fn, d in (
          ("defect-triton-masked-softmax-causal-off-by-one", "launch_causal_off_by_one",
           "causal mask with '>=': the diagonal is masked (row i attends to j < i)"),
          ("defect-triton-masked-softmax-nan-rows", "launch_masked_rows_nan",
           "no guard for a fully masked row: -inf - -inf = NaN where zeros are declared"),
          ("defect-triton-masked-softmax-max-before-mask", "launch_max_before_mask",
           "the row max taken over x·scale before the mask is added"))),
    # routing_defects.py: MoE routing (topk_softmax); twins in kernels/triton/routing_spec.py
    *(TritonKernel(name=name, op="topk_softmax", module="routing_defects.py", launcher=launcher, dtypes=dts,
                   math_mode="triton_approx", params={"k": 8, **p}, expectations=_DET, description=description,
                   supports=lambda M, N, dt: f"E={N} < k=8" if N < 8 else f"E={N} > 4096" if N > 4096 else None)
      for name, launcher, dts, p, description in (
          ("defect-triton-topk-renorm-over-e", "launch_renorm_over_e", [dtypes("bf16", "f32")],
           {"renormalize": True, "index_dtype": "int64"}, "top-8 values divided by the sum of all E gates"),
          ("defect-triton-topk-no-max-sub", "launch_no_max_sub", _ROUTE_IO, {},
           "softmax gates as exp(x) / sum(exp(x)), no max subtraction"),
          ("defect-triton-topk-tail-lost", "launch_tail_lost", _ROUTE_IO, {},
           "each of 32 lanes reads E // 32 experts: the last E % 32 are never read"),
          # no defect: the tie-aware comparison's must-pass control (tests/test_topk_softmax.py)
          ("triton-topk-softmax-high-ties", "launch_high_ties", [dtypes("bf16", "f32")], {},
           "top 8 with ties broken toward the larger index: as right as the smaller"))),
    # merge_states_defects.py: attention-state merge (merge_attn_states); twins in kernels/triton/merge_states_spec.py
    *(TritonKernel(name=name, op="merge_attn_states", module="merge_states_defects.py", launcher=launcher, dtypes=dts,
                   math_mode="triton_approx", params=p, expectations=_DET, description=description,
                   supports=max_row(8192, None, what="one block per row"))
      for name, launcher, dts, p, description in (
          ("defect-triton-merge-mixed-base", "launch_mixed_base", BF16, {"lse_base": "2", "empty": "zero"},
           "base-2 states weighted with exp (base e)"),
          ("defect-triton-merge-no-max-sub", "launch_no_max_sub", [dtypes("f32"), dtypes("bf16")], {},
           "weights exp(lse) without the max subtracted"),
          ("defect-triton-merge-unguarded-empty", "launch_unguarded_empty", BF16, {"lse_base": "2", "empty": "zero"},
           "promises v = 0, lse = -inf for two empty states, merges -inf - -inf = NaN"))),
    # cross entropy variants (twins: kernels/triton/cross_entropy_variants_spec.py)
    *(TritonKernel(name=name, op=op, module="cross_entropy_variants_defects.py", launcher=launcher, params=p,
                   dtypes=[dtypes("bf16", "f32"), dtypes("f32")], math_mode="triton_approx", online=True,
                   expectations=_DET, description=what)
      for name, op, launcher, p, what in (
          ("defect-triton-ce-mean-over-m", "cross_entropy_reduced", "launch_mean_over_m",
           {"reduction": "mean", "label_smoothing": 0.1}, "batch mean of the loss divided by M, not the counted rows"),
          ("defect-triton-ce-smoothing-n-minus-1", "cross_entropy", "launch_smoothing_n_minus_1",
           {"label_smoothing": 0.1, "z_loss": 1e-4, "softcap": 30.0}, "label smoothing spread over N - 1 classes"),
          ("defect-triton-ce-softcap-after-max", "cross_entropy", "launch_softcap_after_max",
           {"label_smoothing": 0.1, "z_loss": 1e-4, "softcap": 30.0},
           "softcap applied after the running max of the raw logits"))),
]

DEFECTS = {
    "defect-triton-ce-no-max-sub": {
        "caught_by": "nan-inf", "twin": "triton-cross-entropy", "device": "cpu",
        "pitfall": "logsumexp without max subtraction: exp(x) overflows past 88.7, the loss is inf",
        "exposing_input": "past_exp_overflow"},
    "defect-triton-ce-labels-as-int32": {
        "caught_by": "value", "twin": "triton-cross-entropy", "device": "cpu",
        "pitfall": "int64 labels read as int32: row i takes the low or high word of label i // 2",
        "exposing_input": "normal_small"},
    "defect-triton-softmax-no-max-sub": {
        "caught_by": "nan-inf", "twin": "triton-softmax", "device": "cpu",
        "pitfall": "softmax without max subtraction: exp(x) overflows to inf past 88.7, inf / inf = NaN",
        "exposing_input": "past_exp_overflow"},
    "defect-triton-softmax-unmasked-store": {
        "caught_by": "out-of-range-write", "twin": "triton-softmax", "device": "cpu",
        "pitfall": "tail store not masked: the last 128-column tile writes up to 127 elements past the row end",
        "exposing_input": "n1000"},
    "defect-triton-softmax-masked-row-zeros": {
        "caught_by": "nan-inf", "twin": "triton-softmax", "device": "cpu",
        "pitfall": "fully masked (-inf) row returns zeros instead of NaN",
        "exposing_input": "fully_masked_rows"},
    "defect-triton-online-softmax-no-rescale": {
        "caught_by": "value", "twin": "triton-online-softmax-tile64", "device": "cpu",
        "pitfall": "online softmax without rescaling the running sum when the max grows",
        "exposing_input": "increasing_rows"},
    "defect-triton-warp-softmax-no-merge-guard": {
        "caught_by": "nan-inf", "twin": "triton-warp-online-softmax", "device": "cpu",
        "pitfall": "-inf identity in the (m, l) butterfly merge: two empty lanes give NaN (d <= 15)",
        "exposing_input": "d7_below_warp"},
    "defect-triton-warp-softmax-no-update-guard": {
        "caught_by": "nan-inf", "twin": "triton-warp-online-softmax", "device": "cpu",
        "pitfall": "per-element online update without the -inf guard: a lane holding only -inf gets l = NaN",
        "exposing_input": "one_neg_inf_row32"},
    "defect-triton-layernorm-naive-variance": {
        "caught_by": "value", "twin": "triton-layernorm", "device": "cpu",
        "pitfall": "LayerNorm variance by E[x^2] - E[x]^2: cancellation on mean >> std rows",
        "exposing_input": "mean_gg_std_1000"},
    "defect-triton-fused-add-rmsnorm-truncates-bf16": {
        "caught_by": "rounding", "twin": "triton-fused-add-rmsnorm", "device": "cpu",
        "pitfall": "fp32 -> bf16 by clearing the low 16 bits (a bit-cast truncation) instead of round-to-nearest-even: "
                   "within 1 ULP everywhere, a quarter of the residual misrounded toward zero",
        "exposing_input": "normal_small"},
    "defect-triton-rmsnorm-io-dtype-acc": {
        "caught_by": "value", "twin": "triton-rmsnorm-tiled", "device": "cpu",
        "pitfall": "sum of squares accumulated in f16/bf16: stagnation on long rows",
        "exposing_input": "vocab_152064"},
    "defect-triton-rmsnorm-capped-block": {
        "caught_by": "unwritten", "twin": "triton-rmsnorm", "device": "cpu",
        "pitfall": "row longer than the block silently not processed instead of refused",
        "exposing_input": "vocab_152064"},
    "defect-triton-rmsnorm-int32-row-offset": {
        "caught_by": "crash", "twin": "triton-rmsnorm-rows", "device": "gpu",
        "pitfall": "row offset tl.program_id(0) * stride kept in int32: past 2^31 elements it wraps negative "
                   "(an illegal address)",
        "exposing_input": "large_index_2pow31"},
    "defect-triton-rmsnorm-ignores-row-stride": {
        "caught_by": "value", "twin": "triton-rmsnorm-rows", "device": "cpu",
        "pitfall": "row r read at r * N instead of r * stride(0): silently wrong on a slice qkv[:, :N]",
        "exposing_input": "strided_rows_pad64"},
    "defect-triton-log-softmax-exp-then-log": {
        "caught_by": "nan-inf", "twin": "triton-log-softmax", "device": "cpu",
        "pitfall": "log_softmax as log(exp(x - m) / s): -inf where a row spans more than about 104",
        "exposing_input": "ls_one_logit_200_above"},
    "defect-triton-ce-neg-log-softmax": {
        "caught_by": "nan-inf", "twin": "triton-cross-entropy", "device": "cpu",
        "pitfall": "cross entropy as -log(softmax(x)[label]): +inf where the loss is a few hundred",
        "exposing_input": "ce_label_at_min_randn50"},
    "defect-triton-masked-softmax-causal-off-by-one": {
        "caught_by": "value", "twin": "triton-masked-softmax", "device": "cpu",
        "pitfall": "causal mask off by one column ('>=' for '>'): the diagonal masked, row 0 fully masked",
        "exposing_input": "sm_causal_triangle"},
    "defect-triton-masked-softmax-nan-rows": {
        "caught_by": "nan-inf", "twin": "triton-masked-softmax", "device": "cpu",
        "pitfall": "a fully masked row gives NaN (0/0) where the kernel declares zeros (masked_rows='zeros')",
        "exposing_input": "sm_mask_full_rows"},
    "defect-triton-masked-softmax-max-before-mask": {
        "caught_by": "value", "twin": "triton-masked-softmax", "device": "cpu",
        "pitfall": "the row max taken before the mask is added: a masked column holding the largest logit "
                   "underflows every live exp (wrong or 0/0 on large logits; exact on randn)",
        "exposing_input": "sm_huge_logits"},
    "defect-triton-topk-renorm-over-e": {
        "caught_by": "value", "twin": "triton-topk-softmax-renorm", "device": "cpu",
        "pitfall": "MoE routing renormalized over all E gates instead of the k picked: the values stay the plain "
                   "softmax, not summing to 1",
        "exposing_input": "normal_small"},
    "defect-triton-topk-no-max-sub": {
        "caught_by": "value", "twin": "triton-topk-softmax", "device": "cpu",
        "pitfall": "routing softmax without max subtraction: exp(x) overflows past 88.7, inf / inf = NaN gates: the "
                   "largest experts are lost from the picks",
        "exposing_input": "topk_wide_logits"},
    "defect-triton-topk-tail-lost": {
        "caught_by": "value", "twin": "triton-topk-softmax", "device": "cpu",
        "pitfall": "routing kernel laid out for E a multiple of 32: the last E % 32 experts are never read, picks "
                   "and gates wrong for E = 60",
        "exposing_input": "topk_e60"},
    "defect-triton-merge-mixed-base": {
        "caught_by": "value", "twin": "triton-merge-attn-states-base2-zero", "device": "cpu",
        "pitfall": "attention-state merge of base-2 lse (FlashInfer's log2-sum-exp2) weighted with exp: wrong weights "
                   "wherever the two lse differ",
        "exposing_input": "normal_small"},
    "defect-triton-merge-no-max-sub": {
        "caught_by": "nan-inf", "twin": "triton-merge-attn-states", "device": "cpu",
        "pitfall": "attention-state merge without the max subtracted: exp(lse) overflows past 88.7, inf / inf = NaN",
        "exposing_input": "merge_big_lse"},
    "defect-triton-merge-unguarded-empty": {
        "caught_by": "nan-inf", "twin": "triton-merge-attn-states-base2-zero", "device": "cpu",
        "pitfall": "two empty states (both lse -inf) merged as -inf - -inf = NaN where v = 0, lse = -inf was declared",
        "exposing_input": "merge_both_neg_inf"},
    "defect-triton-ce-mean-over-m": {
        "caught_by": "value", "twin": "triton-ce-mean", "device": "cpu",
        "pitfall": "mean cross entropy divided by M, not by the non-ignored rows (PyTorch): wrong on padded batches",
        "exposing_input": "ce_half_ignored"},
    "defect-triton-ce-smoothing-n-minus-1": {
        "caught_by": "value", "twin": "triton-ce-variants", "device": "cpu",
        "pitfall": "label smoothing's uniform share spread over N - 1 classes instead of all N (PyTorch)",
        "exposing_input": "d7_below_warp"},
    "defect-triton-ce-softcap-after-max": {
        "caught_by": "nan-inf", "twin": "triton-ce-variants", "device": "cpu",
        "pitfall": "softcap applied after the max of the raw logits: exp(cap(x) - max) underflows on large logits",
        "exposing_input": "ce_huge_logits"},
}

# --- issue #37, norm variants (norm_variants_defects.py; twins: kernels/triton/norm_variants_spec.py)
KERNELS += [
    _t("defect-triton-group-norm-naive-variance", "group_norm", "norm_variants_defects.py",
       "launch_group_norm_naive_var", "group_norm with the group variance as E[x^2] - E[x]^2 in fp32"),
    _t("defect-triton-group-norm-channels-last", "group_norm", "norm_variants_defects.py",
       "launch_group_norm_channels_last", "group_norm reading group g's columns as g + j*G (channels-last)"),
    _t("defect-triton-row-amax-drops-nan", "row_amax", "norm_variants_defects.py", "launch_row_amax_drops_nan",
       "row abs-max by compare-and-select (fmaxf): NaN dropped"),
    _t("defect-triton-var-mean-naive", "var_mean", "norm_variants_defects.py", "launch_var_mean_naive",
       "var_mean with the one-pass variance (sum(x^2) - N*mean^2)/(N - c)"),
    _t("defect-triton-l2norm-eps-in-sqrt", "l2norm", "norm_variants_defects.py", "launch_l2norm_eps_in_sqrt",
       "l2norm as x / sqrt(sum(x^2) + eps), not x / max(||x||, eps)"),
]
DEFECTS.update({
    "defect-triton-group-norm-naive-variance": {
        "caught_by": "value", "twin": "triton-group-norm", "device": "cpu",
        "pitfall": "group variance as E[x^2] - E[x]^2 (Liger-Kernel's GroupNorm): a group of 1000 + a few ULPs "
                   "loses its whole variance to cancellation",
        "exposing_input": "gn_groups_const_and_mean_gg_std"},
    "defect-triton-group-norm-channels-last": {
        "caught_by": "value", "twin": "triton-group-norm", "device": "cpu",
        "pitfall": "channel-major row read as channels-last (stride G inside a group): every group mixes the "
                   "channels of all groups",
        "exposing_input": "gn_group_80_cols"},
    "defect-triton-row-amax-drops-nan": {
        "caught_by": "nan-inf", "twin": "triton-row-amax", "device": "cpu",
        "pitfall": "abs-max with fmaxf / compare-and-select: a NaN in the row is dropped and the largest number "
                   "reported (torch.amax gives NaN): a quantizer's scale silently finite",
        "exposing_input": "amax_nan_inf_rows"},
    "defect-triton-var-mean-naive": {
        "caught_by": "value", "twin": "triton-var-mean", "device": "cpu",
        "pitfall": "one-pass variance sum(x^2) - N*mean^2: on 1000 with one element a few ULPs above (exact in "
                   "bf16/f16) the variance is rounding noise",
        "exposing_input": "vm_cancel_ulp_bumps"},
    "defect-triton-l2norm-eps-in-sqrt": {
        "caught_by": "value", "twin": "triton-l2norm", "device": "cpu",
        "pitfall": "eps added inside the sqrt instead of clamping the norm: identical on ordinary rows, off on "
                   "rows of norm near or below 1e-6",
        "exposing_input": "l2_tiny_rows"},
})

# Quantized outputs (issue 37): kernels/defects/triton/quant_defects.py; twins in kernels/triton/quant_spec.py.
_Q_RESIDENT = Expectations(deterministic=True)
KERNELS += [
    TritonKernel(name="defect-triton-ptq-int8-truncate", op="per_token_quant", module="quant_defects.py",
                 launcher="launch_ptq_int8_truncate", dtypes=[dtypes("f32", "int8")], math_mode="triton_approx",
                 expectations=_Q_RESIDENT, description="int8 per-token quantization by the truncating cast"),
    TritonKernel(name="defect-triton-ptq-half-amax", op="per_token_quant", module="quant_defects.py",
                 launcher="launch_ptq_half_amax", dtypes=[dtypes("bf16", "e4m3")], math_mode="triton_approx",
                 expectations=_Q_RESIDENT, description="per-token scale from the amax of half the row"),
    TritonKernel(name="defect-triton-rmsq-e5m2-at-448", op="rmsnorm_quant", module="quant_defects.py",
                 launcher="launch_rmsq_e5m2_at_448", dtypes=[dtypes("bf16", "e5m2")], math_mode="triton_approx",
                 expectations=_Q_RESIDENT, description="RMSNorm + static e5m2 quantization saturated at e4m3's 448"),
    TritonKernel(name="defect-triton-rmsq-bf16-normed", op="rmsnorm_quant", module="quant_defects.py",
                 launcher="launch_rmsq_bf16_normed", dtypes=[dtypes("bf16", "e4m3")], math_mode="triton_approx",
                 expectations=_Q_RESIDENT,
                 description="fused RMSNorm + fp8 quantization of the bf16-rounded y (undeclared round_normed)"),
]
DEFECTS.update({
    "defect-triton-ptq-int8-truncate": {
        "caught_by": "value", "twin": "triton-per-token-quant", "device": "cpu",
        "pitfall": "int8 quantization by a C / Triton cast, which truncates toward zero: half the elements one step low",
        "exposing_input": "normal_small"},
    "defect-triton-ptq-half-amax": {
        "caught_by": "value", "twin": "triton-per-token-quant", "device": "cpu",
        "pitfall": "the per-row scale from a partial (raced) amax: the other half saturates, the scale is too small",
        "exposing_input": "normal_small"},
    "defect-triton-rmsq-e5m2-at-448": {
        "caught_by": "value", "twin": "triton-rmsnorm-quant", "device": "cpu",
        "pitfall": "an e5m2 output clamped at e4m3's 448 instead of 57344",
        "exposing_input": "beyond_saturation"},
    "defect-triton-rmsq-bf16-normed": {
        "caught_by": "value", "twin": "triton-rmsnorm-quant", "device": "cpu",
        "pitfall": "fused norm+quant one fp8 step off the exact value: it quantizes the bf16-rounded y",
        "exposing_input": "normal_small"},
})

# Sampling's top-k filters (issue 37, FlashInfer's sampling top-k): kernels/defects/triton/top_k_sampling_defects.py;
# twins in kernels/triton/top_k_sampling_spec.py.
_TOPK_ROW = max_row(8192, None, what="one block per row")
KERNELS += [
    TritonKernel(name=name, op=op, module="top_k_sampling_defects.py", launcher=launcher,
                 dtypes=[dtypes("f32"), dtypes("bf16")], math_mode="triton_approx", params=p, expectations=_DET,
                 supports=_TOPK_ROW, description=description)
    for name, op, launcher, p, description in (
        ("defect-triton-top-k-mask-sort-cut", "top_k_mask_logits", "launch_mask_sort_cut", {"k": 8},
         "exactly 8 kept (ties at the 8th largest cut by index) under the default ties='keep_all'"),
        ("defect-triton-top-k-renorm-no-floor", "top_k_renorm_probs", "launch_renorm_no_floor",
         {"k": 1, "sum_floor": 1e-8}, "declares sum_floor=1e-8, divides by the raw kept sum"),
        ("defect-triton-top-k-mask-nan-smallest", "top_k_mask_logits", "launch_mask_nan_smallest", {"k": 8},
         "NaN ranked below every number instead of above (torch.topk's order)"),
        ("defect-triton-top-k-mask-k-plus-1", "top_k_mask_logits", "launch_mask_k_plus_1", {"k": 8},
         "the pivot searched for rank k + 1: k + 1 kept"),
        # no defect: the same sort-then-cut kernel declaring ties='exactly_k' (tests/test_top_k_sampling.py)
        ("triton-top-k-mask-sort-cut-exactly-k", "top_k_mask_logits", "launch_mask_sort_cut_declared",
         {"k": 8, "ties": "exactly_k"}, "exactly 8 kept, ties cut by index, declared ties='exactly_k'"))
]
DEFECTS.update({
    "defect-triton-top-k-mask-sort-cut": {
        "caught_by": "value", "twin": "triton-top-k-mask-logits", "device": "cpu",
        "pitfall": "a sort-then-cut top-k keeps exactly k where every tie at the k-th largest is promised "
                   "(ties='keep_all', FlashInfer's and x >= topk(x, k).values[:, -1:]): tied logits dropped",
        "exposing_input": "topk_mask_tied"},
    "defect-triton-top-k-renorm-no-floor": {
        "caught_by": "nan-inf", "twin": "triton-top-k-renorm-probs-floor", "device": "cpu",
        "pitfall": "top-k renorm declared with FlashInfer's max(sum, 1e-8) but dividing by the raw kept sum: an "
                   "all-zero row gives 0 / 0 = NaN where 0 was promised",
        "exposing_input": "zero_rows"},
    "defect-triton-top-k-mask-nan-smallest": {
        "caught_by": "value", "twin": "triton-top-k-mask-logits", "device": "cpu",
        "pitfall": "NaN ranked below every number (torch.topk ranks it above): in a row holding NaN the k-th "
                   "largest moves down and one more logit per NaN is kept",
        "exposing_input": "some_nan"},
    "defect-triton-top-k-mask-k-plus-1": {
        "caught_by": "value", "twin": "triton-top-k-mask-logits", "device": "cpu",
        "pitfall": "the pivot searched for rank k + 1 (0-based k-th element): k + 1 logits kept",
        "exposing_input": "normal_small"},
})

# Norms over groups of the hidden dim (group_hidden_defects.py; twins: kernels/triton/group_hidden_spec.py). One block
# per group: rows up to 65536 columns (the twins tile any length).
_GROUP_BLOCK = max_row(65536, "triton-group-rmsnorm", what="one block per group")
KERNELS += [
    _t("defect-triton-group-layernorm-naive-variance", "group_layernorm", "group_hidden_defects.py",
       "launch_group_layernorm_naive_var", "group_layernorm with the group variance as E[x^2] - E[x]^2 in fp32",
       dts=[dtypes("f32")], supports=_GROUP_BLOCK),
    _t("defect-triton-group-rmsnorm-row-mask", "group_rmsnorm", "group_hidden_defects.py",
       "launch_group_rmsnorm_row_mask", "group_rmsnorm whose padded group block is masked by the row's end, not the "
       "group's: it reads the next group's columns", dts=[dtypes("f32")], supports=_GROUP_BLOCK),
]
DEFECTS.update({
    "defect-triton-group-layernorm-naive-variance": {
        "caught_by": "value", "twin": "triton-group-layernorm", "device": "cpu",
        "pitfall": "group variance as E[x^2] - E[x]^2 in one pass: a head of 500 + N(0, 1) (mean >> std) loses "
                   "digits of its variance to cancellation, y off by 1%",
        "exposing_input": "ghn_groups_of_18"},
    "defect-triton-group-rmsnorm-row-mask": {
        "caught_by": "value", "twin": "triton-group-rmsnorm", "device": "cpu",
        "pitfall": "a group's block (N/G padded to a power of two) masked by the row's end instead of the group's: "
                   "groups of 18 columns sum the squares of the next group's 14 as well",
        "exposing_input": "ghn_groups_of_18"},
})

# softmax's optional lse output (softmax_lse_defects.py; twins: kernels/triton/softmax_lse_spec.py): y right, lse wrong
_LSE = {"lse": True, "masked_rows": "zeros", "lse_nonfinite": "posinf"}
_LSE_MASKED = {**_LSE, "scale": 0.125, "mask": "MxN", "causal": True}
KERNELS += [
    TritonKernel(name=name, op="softmax", module="softmax_lse_defects.py", launcher=launcher, dtypes=dts,
                 math_mode="triton_approx", params=p, expectations=_DET, supports=max_row(32768, None),
                 description=description)
    for name, launcher, dts, p, description in (
        ("defect-triton-softmax-lse-no-sink", "launch_no_sink", BF16, {**_LSE, "sinks": True, "lse_base": "2"},
         "lse of the row without its sink logit (y divides by the sum with it)"),
        ("defect-triton-softmax-lse-no-max", "launch_no_max", [dtypes("f32")], _LSE_MASKED,
         "lse = log(sum exp(z - m)), the max never added back"),
        ("defect-triton-softmax-lse-dead-row-neginf", "launch_dead_neginf", [dtypes("f32")], _LSE_MASKED,
         "a fully masked row's lse left at 0 + log(0) = -inf where +inf is declared"))
]
DEFECTS.update({
    "defect-triton-softmax-lse-no-sink": {
        "caught_by": "value", "twin": "triton-softmax-lse-sinks-base2", "device": "cpu",
        "pitfall": "attention sinks counted in y's denominator but left out of the stored lse: a backward or a state "
                   "merge reading lse renormalizes without the sink (y itself is right: a test of y alone passes)",
        "exposing_input": "normal_small"},
    "defect-triton-softmax-lse-no-max": {
        "caught_by": "value", "twin": "triton-softmax-lse", "device": "cpu",
        "pitfall": "lse stored as log(sum exp(z - m)) without the row max added back (y is right)",
        "exposing_input": "normal_small"},
    "defect-triton-softmax-lse-dead-row-neginf": {
        "caught_by": "nan-inf", "twin": "triton-softmax-lse", "device": "cpu",
        "pitfall": "a fully masked row's lse written -inf (split-KV's convention) where the kernel declares +inf "
                   "(lse_nonfinite='posinf', FlashAttention's non-split one): only rows with nothing live differ",
        "exposing_input": "sm_mask_full_rows"},
})

# Each row's argmax (greedy sampling; op row_argmax): kernels/defects/triton/argmax_defects.py, the switches of
# kernels/triton/argmax.py; twins in kernels/triton/argmax_spec.py.
KERNELS += [
    TritonKernel(name=name, op="row_argmax", module="argmax_defects.py", launcher=launcher, dtypes=[dtypes("f32")],
                 math_mode="triton_approx", expectations=_DET, description=description)
    for name, launcher, description in (
        ("defect-triton-argmax-last-tie", "launch_last_tie",
         "the last index of the maximum (>= per lane, the largest column across lanes) under ties='first'"),
        ("defect-triton-argmax-bf16-compare", "launch_bf16_compare", "f32 logits compared after rounding to bf16"),
        ("defect-triton-argmax-no-tail", "launch_no_tail", "whole 4096-column tiles only: the tail never read"))
]
# no defect: the last-tie kernel declaring ties='any' (tests/test_row_argmax.py: the tie-aware judge's must-pass control)
KERNELS.append(TritonKernel(name="triton-argmax-last-tie-any", op="row_argmax", module="argmax_defects.py",
                            launcher="launch_last_tie", dtypes=[dtypes("f32")], math_mode="triton_approx",
                            params={"ties": "any"}, expectations=_DET,
                            description="the last index of the maximum, declared ties='any'"))
DEFECTS.update({
    "defect-triton-argmax-last-tie": {
        "caught_by": "value", "twin": "triton-row-argmax", "device": "cpu",
        "pitfall": "ties resolved to the last index of the maximum while declaring ties='first' (torch.argmax): "
                   "greedy decoding picks another token than torch on tied logits",
        "exposing_input": "argmax_ties"},
    "defect-triton-argmax-bf16-compare": {
        "caught_by": "value", "twin": "triton-row-argmax", "device": "cpu",
        "pitfall": "f32 logits compared in bf16: a maximum within a bf16 ULP of an earlier second largest loses",
        "exposing_input": "argmax_one_ulp"},
    "defect-triton-argmax-no-tail": {
        "caught_by": "value", "twin": "triton-row-argmax", "device": "cpu",
        "pitfall": "the last partial tile of a row never read: a maximum in the tail (vocab 152064 = 37 tiles + "
                   "512) is missed",
        "exposing_input": "argmax_max_last"},
})

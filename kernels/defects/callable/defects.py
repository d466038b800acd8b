"""Callable defect catalogue: kernels written as Python callables (torch on the CPU) whose defect is a
promise the author never declared. Each is caught with default contracts; its twin is the same function
with the contract declared (verifier.spec.Contracts), and passes. Runs on any machine.

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
}

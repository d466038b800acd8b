"""Row statistics written as torch callables, a 16-bit output per row: the row mean in float32 converted to float16
toward zero (a hand-written round-toward-zero conversion, as ``.to(tl.float16, fp_downcast_rounding="rtz")`` does),
and its twin rounding to nearest even. Each case has 1-13 rows, so no single case shows the truncation (the margin
allows 4 misrounded elements); summed over the cases of the dtype it is found (verifier.judge.rounding.RoundingPool).
A Llama-style RMSNorm (x·rstd rounded to float16 before the weight, declared) stays clean summed too."""
import torch

from verifier.spec import CallableKernel, dtypes


def _toward_zero_f16(t):
    """float32 -> float16 toward zero: round to nearest, then one step back where that went past |t|."""
    h = t.to(torch.float16)
    past = h.float().abs() > t.abs()
    bits = h.view(torch.int16)  # sign-magnitude: one less is one step nearer zero, either sign
    return torch.where(past, bits - 1, bits).view(torch.float16)


def _mean(convert):
    def fn(inputs, outputs, params, dt):
        return {"y": convert(inputs["x"].float().mean(-1))}
    return fn


def _llama_rmsnorm(inputs, outputs, params, dt):
    x = inputs["x"].float()
    normed = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + params["eps"])
    return {"y": inputs["w"] * normed.to(inputs["x"].dtype)}


F16 = [dtypes("f16")]
KERNELS = [
    CallableKernel(name="row-mean-toward-zero-f16", op="row_mean", fn=_mean(_toward_zero_f16), dtypes=F16),
    CallableKernel(name="row-mean-nearest-f16", op="row_mean", fn=_mean(lambda t: t.to(torch.float16)), dtypes=F16),
    # x·rstd rounded to the I/O dtype before the weight on purpose (Hugging Face's LlamaRMSNorm): declared
    CallableKernel(name="llama-rmsnorm-f16", op="rmsnorm", fn=_llama_rmsnorm, dtypes=F16, tolerance={"base_ulps": 2}),
]

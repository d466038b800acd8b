"""FlashInfer's RMSNorm kernels (flashinfer-python==0.7.4, the headers its JIT wheel ships), built by our norm.cu
with FlashInfer's own JIT flags (-use_fast_math: rsqrt.approx.ftz, flushed subnormals) and launched as its host
code launches them: block (32, warps), VEC_SIZE = gcd(16 / sizeof(T), d). Install the headers only:
``pip install --no-deps flashinfer-python==0.7.4`` (its dependencies are CUDA libraries the build never reads).
"""
from math import gcd

from verifier.spec import (FLOAT_IO, Contracts, CudaKernel, ctype, Launch, Scalar, Stride, dtypes, max_row, package_path,
                           register_resident)

REQUIRES = {"flashinfer": "flashinfer-python==0.7.4 --no-deps"}
INCLUDE = (package_path("flashinfer", "data", "include"), "stub_include")
FLAGS = ("-use_fast_math", "-DENABLE_BF16")


def _shape(N, dt):
    """(entry's template args, block, warps) as FlashInfer's RMSNorm / FusedAddRMSNorm host functions pick them."""
    vec = gcd(16 // {"float32": 4}.get(dt.input, 2), N)
    warps = -(-min(1024, N // vec) // 32)
    return f"<{vec}, {ctype(dt.input)}>", (32, warps), warps


def rmsnorm(M, N, dt, p):
    t, block, warps = _shape(N, dt)
    return [Launch(f"flashinfer::norm::RMSNormKernel{t}", (M,), block,
                   ("x", "w", "y", "N", Stride("x", "int32"), Stride("y", "int32"), Scalar("float32", p["offset"]), "eps"), smem=4 * warps)]


def fused_add(M, N, dt, p):  # y is written over x (the kernel's `input`); residual <- x + residual
    t, block, warps = _shape(N, dt)
    return [Launch(f"flashinfer::norm::FusedAddRMSNormKernel{t}", (M,), block,
                   ("y", "residual", "w", "N", Stride("y", "int32"), Stride("residual", "int32"),
                    Scalar("float32", p["offset"]), "eps"),
                   smem=4 * ((-(-warps // 4)) * 4 + N))]


# FlashInfer passes each tensor's row stride (uint32: int32 bits) and loads VEC_SIZE elements at a time from
# pointers it assumes aligned (torch's allocations are): a view one element into a buffer is outside its contract.
_COMMON = dict(source="norm.cu", include_dirs=INCLUDE, extra_flags=FLAGS, requires=REQUIRES, math_mode="fast",
               expectations=register_resident(), contracts=Contracts(alignment=16))
KERNELS = [
    CudaKernel(name="flashinfer-rmsnorm", op="rmsnorm", launches=rmsnorm, dtypes=FLOAT_IO, **_COMMON),
    CudaKernel(name="flashinfer-gemma-rmsnorm", op="rmsnorm", launches=rmsnorm, dtypes=FLOAT_IO,
               params={"offset": 1.0}, **_COMMON),
    # The row is staged in shared memory as float: 160 KB is what every sm_80+ GPU lets one block have.
    CudaKernel(name="flashinfer-fused-add-rmsnorm", op="fused_add_rmsnorm", launches=fused_add, dtypes=FLOAT_IO,
               outputs_alias={"y": "x"}, supports=max_row(40960, what="the shared-memory row limit"), **_COMMON),
]

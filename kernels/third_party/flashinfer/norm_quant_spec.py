"""FlashInfer's fused RMSNorm + static fp8 quantization (flashinfer-python==0.7.4, ``RMSNormQuantKernel`` of
flashinfer/norm.cuh), op rmsnorm_quant, and its fused-add sibling ``FusedAddRMSNormQuantKernel`` (residual <- x +
residual stored in the input dtype, the float32 sum normalized and quantized), op fused_add_rmsnorm_quant: built
by our norm_quant.cu with FlashInfer's JIT flags (-use_fast_math) and launched as its host functions
``RMSNormQuant`` / ``FusedAddRMSNormQuant`` launch them: block (32, warps), VEC_SIZE = gcd(16 / sizeof(T), d),
weight_bias 0. Install the headers only: ``pip install --no-deps flashinfer-python==0.7.4``.

Its clamp, fmaxf(-max, fminf(v, max)), turns NaN into +max (a NaN row is written as 448s), so NaN inputs are outside
what it promises; it loads VEC_SIZE elements at a time from aligned pointers."""
from math import gcd

from verifier.spec import Contracts, CudaKernel, Launch, Scalar, Stride, ctype, dtypes, max_row, package_path, register_resident



def rmsnorm_quant(M, N, dt, p):
    vec, warps = gcd(8, N), -(-min(1024, N // gcd(8, N)) // 32)  # 16 / sizeof(T) = 8 for the 16-bit inputs
    return [Launch(f"flashinfer::norm::RMSNormQuantKernel<{vec}, {ctype(dt.input)}, {ctype(dt.output)}>", (M,),
                   (32, warps), ("x", "w", "y", "N", Stride("x", "int32"), Stride("y", "int32"),
                                 Scalar("float32", p["offset"]), "scale", "eps"), smem=4 * warps)]


def fused_add_rmsnorm_quant(M, N, dt, p):
    # as its host FusedAddRMSNormQuant launches it: the float32 sums staged in dynamic shared memory after the
    # warps' partial sums (ceil(warps / 4)·4 floats)
    vec, warps = gcd(8, N), -(-min(1024, N // gcd(8, N)) // 32)
    return [Launch(f"flashinfer::norm::FusedAddRMSNormQuantKernel<{vec}, {ctype(dt.input)}, {ctype(dt.output)}>",
                   (M,), (32, warps), ("x", "residual", "w", "y", "N", Stride("x", "int32"), Stride("residual", "int32"),
                                       Stride("y", "int32"), Scalar("float32", p["offset"]), "scale", "eps"),
                   smem=4 * ((-(-warps // 4)) * 4 + N))]


_FLAGS = dict(math_mode="fast", include_dirs=(package_path("flashinfer", "data", "include"), "stub_include"),
              extra_flags=("-use_fast_math", "-DENABLE_BF16"), requires={"flashinfer": "flashinfer-python==0.7.4 --no-deps"},
              expectations=register_resident(), contracts=Contracts(alignment=16, nan_inputs="unsupported"))

KERNELS = [
    CudaKernel(name="flashinfer-rmsnorm-quant", op="rmsnorm_quant", source="norm_quant.cu", launches=rmsnorm_quant,
               dtypes=[dtypes("bf16", "e4m3"), dtypes("f16", "e4m3"), dtypes("bf16", "e5m2")], **_FLAGS,
               description="FlashInfer RMSNormQuantKernel: x * rsqrt.approx(ms + eps) * w * (1 / scale), clamped, "
                           "cast_store"),
    # The float32 row staged in shared memory: 160 KB is what every sm_80+ GPU lets one block have.
    CudaKernel(name="flashinfer-fused-add-rmsnorm-quant", op="fused_add_rmsnorm_quant", source="norm_quant.cu",
               launches=fused_add_rmsnorm_quant, dtypes=[dtypes("bf16", "e4m3"), dtypes("f16", "e4m3")], **_FLAGS,
               supports=max_row(40960, what="the shared-memory row limit"),
               description="FlashInfer FusedAddRMSNormQuantKernel: residual <- x + residual (stored), the float32 "
                           "sum * rsqrt.approx(ms + eps) * w * (1 / scale), clamped, cast_store"),
]

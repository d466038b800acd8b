"""FlashInfer's sampling softmax (flashinfer-python==0.7.4: ``flashinfer.sampling.softmax(logits, temperature)``),
a softmax with a scale: its kernel multiplies each logit by 1 / temperature (``__fmul_rn``) before the max. Declared
as the softmax op with ``scale`` = 1 / temperature (a power of two: the reciprocal FlashInfer computes is exact),
launched as its host code launches ``OnlineSoftmaxFusedKernel`` (sampling_softmax.cu): 1024 threads, VEC_SIZE =
gcd(4, N), the row cached in shared memory for small batches. For M <= 128 and N >= 24576 FlashInfer runs its
vocab-splitting pair of kernels instead: refused here (not declared). FlashInfer's JIT flags: -use_fast_math.
Rows are read at bx * d: contiguous only; loads are 16-byte vectors where gcd(4, N) = 4.
"""
from math import gcd

from verifier.spec import Contracts, CudaKernel, Launch, Pointer, Scalar, dtypes, package_path

REQUIRES = {"flashinfer": "flashinfer-python==0.7.4 --no-deps"}
INCLUDE = (package_path("flashinfer", "data", "include"), "stub_include")
TEMP_STORAGE = 4096  # bytes reserved for OnlineSoftmaxTempStorage<1024> (cub's BlockReduce of 32 warps: < 1 KB)


def _cache(M, N):
    return N <= (4096 if M <= 16 else 2048 if M <= 32 else 0)


def _launches(M, N, dt, p):
    vec, cache = gcd(4, N), _cache(M, N)
    smem = TEMP_STORAGE + ((-(-N // vec) * vec + vec) * 4 if cache else 0)
    return [Launch(f"flashinfer::sampling::OnlineSoftmaxFusedKernel<1024, {vec}, float, {str(cache).lower()}>",
                   (M,), (1024,), ("x", "y", Pointer(None), Scalar("float32", 1.0 / p["scale"]), Scalar("uint32", "N")),
                   smem=smem)]


def _path_a(M, N, dt):
    if M <= 128 and N >= 24576:
        return (f"FlashInfer runs its vocab-splitting kernels for M <= 128 and N >= 24576 (M={M}, N={N}); "
                "only the one-pass kernel is declared")
    return None


KERNELS = [
    CudaKernel(name=f"flashinfer-sampling-softmax-t{t}", op="softmax", source="sampling_softmax.cu",
               include_dirs=INCLUDE, extra_flags=("-use_fast_math",), requires=REQUIRES, math_mode="fast",
               dtypes=[dtypes("f32")], launches=_launches, supports=_path_a, params={"scale": 1.0 / t},
               contracts=Contracts(layout="contiguous", alignment=16),
               description=f"flashinfer.sampling.softmax(logits, temperature={t}): softmax(logits / {t})")
    for t in (0.5, 2.0)
]

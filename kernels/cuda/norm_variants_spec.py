"""Norm variants (norm_variants.cu, issue #37): group_norm with and without affine, row_amax, row_mean, var_mean,
l2norm, rmsnorm / layernorm without a weight (layernorm_bias: with a bias). One block of 256 threads per row (group_norm: per row and group), fp32 math, any N (second passes re-read
the row), IEEE division and sqrt. Row strides passed: views such as h[:, :N] are checked."""
from verifier.spec import FLOAT_IO, CudaKernel, Launch, Scalar, Stride

THREADS = 256  # kThreads in norm_variants.cu
SX, SY = Stride("x", "int64"), Stride("y", "int64")


def _gn_args(params, affine):
    ints = (Scalar("int32", int(params["groups"])), Scalar("int32", int(params["channels"])), "eps", SX, SY)
    return (("x", "w", "b", "y") if affine else ("x", "y")) + ("N",) + ints


def _group_norm(affine):
    entry = "group_norm" if affine else "group_norm_noaffine"
    return lambda M, N, dt, p: [Launch(f"{entry}_{dt.tag}", grid=(M * int(p["groups"]),), block=(THREADS,),
                                       args=_gn_args(p, affine))]


def _row(entry, *args):
    return lambda M, N, dt, p: [Launch(f"{entry}_{dt.tag}", grid=(M,), block=(THREADS,), args=args)]


def _var_mean(M, N, dt, p):
    return [Launch(f"var_mean_{dt.tag}", grid=(M,), block=(THREADS,),
                   args=("x", "var", "mean", "N", Scalar("int32", int(p["correction"])), SX))]


def _k(name, op, launches, description):
    return CudaKernel(name=name, op=op, source="norm_variants.cu", dtypes=FLOAT_IO, launches=launches,
                      description=description)


KERNELS = [
    _k("cuda-group-norm", "group_norm", _group_norm(True),
       "block per (row, group): two-pass mean and variance, rstd = 1/sqrtf, per-channel w, b"),
    _k("cuda-group-norm-noaffine", "group_norm_noaffine", _group_norm(False),
       "block per (row, group): two-pass mean and variance, no affine"),
    _k("cuda-row-amax", "row_amax", _row("row_amax", "x", "y", "N", SX),
       "block per row: max |x| keeping NaN (a compare, not fmaxf)"),
    _k("cuda-row-mean", "row_mean", _row("row_mean", "x", "y", "N", SX), "block per row: sum / N"),
    _k("cuda-var-mean", "var_mean", _var_mean, "block per row: two-pass mean and variance / (N - correction)"),
    _k("cuda-l2norm", "l2norm", _row("l2norm", "x", "y", "N", "eps", SX, SY),
       "block per row: x / max(sqrtf(sum x^2), eps), a NaN norm kept"),
    _k("cuda-rmsnorm-noweight", "rmsnorm_noweight", _row("rmsnorm_noweight", "x", "y", "N", "eps", SX, SY),
       "block per row: x / sqrtf(mean(x^2) + eps), no weight"),
    _k("cuda-layernorm-noweight", "layernorm_noweight", _row("layernorm_noweight", "x", "y", "N", "eps", SX, SY),
       "block per row: two-pass (x - mean) * rstd, no weight or bias"),
    _k("cuda-layernorm-bias", "layernorm_bias", _row("layernorm_bias", "x", "b", "y", "N", "eps", SX, SY),
       "block per row: two-pass (x - mean) * rstd + b, no weight"),
]

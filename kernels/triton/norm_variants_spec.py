"""Norm variants (issue #37) in Triton (norm_variants.py): group_norm with and without affine, row_amax, row_mean,
var_mean, l2norm, and rmsnorm / layernorm without a weight (layernorm_bias: with a bias). fp32 math, any N (4096-column tiles re-read from memory), one program per row (group_norm: per
row and group), each reduced in a fixed order: deterministic.

Dtypes: a 16-bit one is declared where its values differ in kind (var_mean's cancellation in f16, row_amax's NaN in
bf16); the other kernels run the same fp32 code for every I/O dtype, so f32 alone keeps the CPU suite's interpreter
time small. On a GPU the CUDA kernels (kernels/cuda/norm_variants_spec.py) cover all three dtypes."""
from verifier.spec import FLOAT_IO, Expectations, TritonKernel, dtypes

_DET = Expectations(deterministic=True)


F32, F32_BF16, F32_F16 = [dtypes("f32")], [dtypes("f32"), dtypes("bf16")], [dtypes("f32"), dtypes("f16")]


def _k(name, op, launcher, description, dts=FLOAT_IO):
    return TritonKernel(name=name, op=op, module="norm_variants.py", launcher=launcher, dtypes=dts,
                        math_mode="triton_approx", expectations=_DET, description=description)


KERNELS = [
    _k("triton-group-norm", "group_norm", "launch_group_norm",
       "one program per (row, group): two-pass mean and variance over the group's columns, per-channel w, b", F32),
    _k("triton-group-norm-noaffine", "group_norm_noaffine", "launch_group_norm_noaffine",
       "one program per (row, group): two-pass mean and variance, no affine", F32),
    _k("triton-row-amax", "row_amax", "launch_row_amax", "one program per row: max |x|, NaN counted apart", F32_BF16),
    _k("triton-row-mean", "row_mean", "launch_row_mean", "one program per row: sum / N", F32),
    _k("triton-var-mean", "var_mean", "launch_var_mean", "one program per row: two-pass mean and variance", F32_F16),
    _k("triton-l2norm", "l2norm", "launch_l2norm", "one program per row: x / max(sqrt(sum x^2), eps)", F32),
    _k("triton-rmsnorm-noweight", "rmsnorm_noweight", "launch_rmsnorm_noweight",
       "one program per row: x / sqrt(mean(x^2) + eps), no weight", F32),
    _k("triton-layernorm-noweight", "layernorm_noweight", "launch_layernorm_noweight",
       "one program per row: two-pass (x - mean) * rstd, no weight or bias", F32),
    _k("triton-layernorm-bias", "layernorm_bias", "launch_layernorm_bias",
       "one program per row: two-pass (x - mean) * rstd + b, no weight", F32),
]

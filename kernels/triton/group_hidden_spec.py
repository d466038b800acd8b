"""Norms over groups of the hidden dim in Triton (group_hidden.py): group_rmsnorm and group_layernorm, a weight (and
for group_layernorm_bias a bias) per column. fp32 math, any group size (4096-column tiles re-read from memory), one
program per (row, group) on one grid axis, each group reduced in a fixed order: deterministic.

Declared at the op's groups=4 and at groups=3, whose group sizes are not powers of two on every case the op allows
(24 columns at N=72, 343 at N=1029, 11 at N=33: the block is padded and masked by the group's end).

Dtypes: the kernel runs the same fp32 code for every I/O dtype (16-bit rounds once, on the store), so
triton-group-rmsnorm declares f32 and bf16 (the 16-bit loads and store), the others f32 alone: the CPU suite's
interpreter time stays small. Any float I/O dtype works the same (a spec of your own may declare FLOAT_IO)."""
from verifier.spec import Expectations, TritonKernel, dtypes, grid_limit

_DET = Expectations(deterministic=True)
F32, F32_BF16 = [dtypes("f32")], [dtypes("f32"), dtypes("bf16")]


def _k(name, op, launcher, description, dts, params=None):
    G = (params or {}).get("groups", 4)
    return TritonKernel(name=name, op=op, module="group_hidden.py", launcher=launcher, dtypes=dts,
                        params=params or {}, math_mode="triton_approx", expectations=_DET,
                        supports=grid_limit(G), description=description)


KERNELS = [
    _k("triton-group-rmsnorm", "group_rmsnorm", "launch_group_rmsnorm",
       "one program per (row, group): x / sqrt(mean(x^2) + eps) over the group's columns, w per column", F32_BF16),
    _k("triton-group-rmsnorm-g3", "group_rmsnorm", "launch_group_rmsnorm",
       "as triton-group-rmsnorm, 3 groups (group sizes not powers of two)", F32, {"groups": 3}),
    _k("triton-group-layernorm", "group_layernorm", "launch_group_layernorm",
       "one program per (row, group): two-pass mean and variance over the group's columns, w per column", F32),
    _k("triton-group-layernorm-bias-g3", "group_layernorm", "launch_group_layernorm",
       "as triton-group-layernorm with b per column, 3 groups (group sizes not powers of two)", F32,
       {"groups": 3, "b": True}),
]

"""Each row's argmax in Triton (kernels/triton/argmax.py; op row_argmax): one program per row, 4096-column tiles,
per-lane (value, column) pairs merged exactly, the first column of the maximum (ties='first'), NaN the maximum as
torch.argmax. Deterministic: a fixed order per row. One dtype each keeps the CPU suite's interpreter time small; the
CUDA kernels (kernels/cuda/argmax_spec.py) cover the three I/O dtypes on a GPU."""
from verifier.spec import Expectations, TritonKernel, dtypes

_DET = Expectations(deterministic=True)

KERNELS = [
    TritonKernel(name="triton-row-argmax", op="row_argmax", module="argmax.py", launcher="launch",
                 dtypes=[dtypes("f32")], math_mode="triton_approx", expectations=_DET,
                 description="one program per row: per-lane first maximum, lanes merged to the first column; int64"),
    TritonKernel(name="triton-row-argmax-int32-value", op="row_argmax", module="argmax.py", launcher="launch",
                 dtypes=[dtypes("bf16")], math_mode="triton_approx", expectations=_DET,
                 params={"index_dtype": "int32", "value": True},
                 description="as triton-row-argmax, int32 index (ggml's dst) and the maximum itself"),
]

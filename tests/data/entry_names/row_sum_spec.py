"""One kernel per way of naming an entry in a C++ library (tests/test_entry_names.py)."""
from verifier.spec import CudaKernel, Launch, dtypes

# name -> (entry as the spec writes it, block size)
ENTRIES = {
    "anon-row-sum": ("row_sum<float>", 256),                           # void (anonymous namespace)::row_sum<float>
    "anon-row-sum-qualified": ("(anonymous namespace)::row_sum<float>", 256),
    "nested-row-sum": ("outer::inner::row_sum<float, 128>", 128),
    "nested-row-sum-short": ("inner::row_sum<float,128>", 128),
    "lib-anon-row-sum": ("lib::row_sum<float, 64>", 64),               # lib::(anonymous namespace)::row_sum<float, 64u>
    "lib-anon-row-sum-unsigned": ("lib::row_sum<float, 32u>", 32),
}


def _launch(entry, block):
    return lambda M, N, dt, p: [Launch(entry, grid=(M,), block=(block,), args=("x", "y", "N"))]


KERNELS = [CudaKernel(name=name, op="reduce_sum", source="row_sum.cu", dtypes=[dtypes("f32")],
                      launches=_launch(entry, block))
           for name, (entry, block) in ENTRIES.items()]

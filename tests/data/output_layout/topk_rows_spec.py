"""A router whose ids rows lie n_expert apart (ggml's topk_moe layout), declared with output_layout, and its twin
writing them k apart into the same buffer (tests/test_output_layout_gpu.py)."""
from verifier.spec import CudaKernel, Launch, RowStride, Scalar, dtypes

K = 4


def launch(entry):
    return lambda M, N, dt, p: [Launch(entry, grid=(-(-M // 128),), block=(128,),
                                       args=("x", "values", "indices", "M", "N", Scalar("int32", K)))]


def _kernel(name, entry):
    return CudaKernel(name=name, op="topk_softmax", source="topk_rows.cu", dtypes=[dtypes("f32")], params={"k": K},
                      launches=launch(entry), output_layout={"indices": RowStride("N")},
                      supports=lambda M, N, dt: None if K <= N <= 4096 else f"N={N}: one thread per row of >= {K}",
                      description="one thread per row; ids rows N apart")


KERNELS = [_kernel("topk-ids-at-e", "topk_ids_at_e"), _kernel("topk-ids-at-k-defect", "topk_ids_at_k")]

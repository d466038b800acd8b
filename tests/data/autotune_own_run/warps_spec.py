from verifier.spec import TritonKernel, dtypes

ROWS = lambda M, N, dt: None if N <= 4096 else "N > 4096 (one block per row)"  # noqa: E731
KERNELS = [TritonKernel(name="rowsum-warps-only", op="reduce_sum", module="rowsum_warps.py", launcher="launch",
                        dtypes=[dtypes("f32")], math_mode="triton_approx", supports=ROWS),
           TritonKernel(name="rowsum-warps-only-via-library", op="reduce_sum", module="warps_via_lib.py",
                        launcher="launch", dtypes=[dtypes("f32")], math_mode="triton_approx", supports=ROWS)]

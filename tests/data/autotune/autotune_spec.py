from verifier.spec import TritonKernel, dtypes

ROWS = lambda M, N, dt: None if N <= 4096 else "N > 4096 (one block per row)"  # noqa: E731
KERNELS = [TritonKernel(name="rowsum-autotuned-bug", op="reduce_sum", module="rowsum_autotuned.py",
                        launcher="launch_bug", dtypes=[dtypes("f32")], supports=ROWS, math_mode="triton_approx"),
           TritonKernel(name="rowsum-autotuned-ok", op="reduce_sum", module="rowsum_autotuned.py",
                        launcher="launch_ok", dtypes=[dtypes("f32")], math_mode="triton_approx")]

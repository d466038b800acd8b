from verifier.spec import TritonKernel, dtypes

SHORT = lambda M, N, dt: None if N <= 4096 else "N > 4096 (one block per row)"  # noqa: E731
KERNELS = [TritonKernel(name="rowsum-rows-per-program", op="reduce_sum", module="rowsum_rows_per_program.py",
                        launcher="launch_ok", dtypes=[dtypes("f32")], supports=SHORT, math_mode="triton_approx"),
           TritonKernel(name="rowsum-rows-per-program-floor", op="reduce_sum", module="rowsum_rows_per_program.py",
                        launcher="launch_floor", dtypes=[dtypes("f32")], supports=SHORT, math_mode="triton_approx")]

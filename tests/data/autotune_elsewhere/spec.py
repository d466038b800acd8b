from verifier.spec import TritonKernel, dtypes

KERNELS = [TritonKernel(name="rowsum-through-a-library", op="reduce_sum", module="wrapper.py", launcher="launch",
                        dtypes=[dtypes("f32")], supports=lambda M, N, dt: None if N <= 4096 else "N > 4096",
                        math_mode="triton_approx")]

from verifier.spec import TritonKernel, dtypes

KERNELS = [TritonKernel(name="triton-row-sum-counted", op="reduce_sum", module="counter_kernel.py", launcher="launch",
                        dtypes=[dtypes("f32")], math_mode="triton_approx")]

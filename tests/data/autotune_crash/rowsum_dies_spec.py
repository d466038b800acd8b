from verifier.spec import TritonKernel, dtypes

KERNELS = [TritonKernel(name="rowsum-dies-under-config-2", op="reduce_sum", module="rowsum_dies.py", launcher="launch",
                        dtypes=[dtypes("f32")], math_mode="triton_approx",
                        supports=lambda M, N, dt: None if N <= 4096 else "N > 4096")]

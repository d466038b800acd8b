from verifier.spec import TritonKernel, dtypes

KERNELS = [TritonKernel(name="rowsum-own-tuner", op="reduce_sum", module="rowsum_own_tuner.py", launcher="launch",
                        dtypes=[dtypes("f32")], math_mode="triton_approx",
                        supports=lambda M, N, dt: None if N <= 4096 else "N > 4096 (one block per row)")]

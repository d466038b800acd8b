from verifier.spec import TritonKernel, dtypes

KERNELS = [TritonKernel(name="rowsum-two-paths", op="reduce_sum", module="rowsum_two_paths.py", launcher="launch",
                        dtypes=[dtypes("f32")])]

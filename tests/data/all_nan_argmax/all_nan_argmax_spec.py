from verifier.spec import TritonKernel, dtypes

KERNELS = [TritonKernel(name="amax-all-nan-argmax", op="row_amax", module="all_nan_argmax.py", launcher="launch",
                        dtypes=[dtypes("f32")])]

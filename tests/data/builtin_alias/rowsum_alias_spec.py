from verifier.spec import TritonKernel, dtypes

KERNELS = [TritonKernel(name=f"rowsum-alias{suffix}", op="reduce_sum", module="rowsum_alias.py", launcher=launcher,
                        dtypes=[dtypes("f32")], math_mode="triton_approx")
           for suffix, launcher in (("", "launch"), ("-first-32", "launch_first_32"))]

from verifier.spec import TritonKernel, dtypes

KERNELS = [TritonKernel(name=f"rmsnorm-fresh-libdevice{suffix}", op="rmsnorm", module="rmsnorm_fresh_libdevice.py",
                        launcher=launcher, dtypes=[dtypes("f32")], math_mode="triton_approx",
                        supports=lambda M, N, dt: None if N <= 4096 else "N > 4096 (one block per row)")
           for suffix, launcher in (("", "launch"), ("-no-weight", "launch_no_weight"))]

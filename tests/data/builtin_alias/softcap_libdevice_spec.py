from verifier.spec import TritonKernel, dtypes

KERNELS = [TritonKernel(name=f"softcap-libdevice{suffix}", op="softmax", module="softcap_libdevice.py",
                        launcher=launcher, dtypes=[dtypes("f32")], math_mode="triton_approx", params={"softcap": 5.0},
                        supports=lambda M, N, dt: None if N <= 4096 else "N > 4096 (one block per row)")
           for suffix, launcher in (("", "launch"), ("-uncapped", "launch_uncapped"))]

"""`verifier check benchmarks/autotune8_spec.py --level ci` times the check of an eight-config autotuned kernel
(every config, every catalogue case and dtype); docs/gpu-runs/2026-12-04-issues-34-35-36.md has the H200 figure."""
from verifier.spec import FLOAT_IO, TritonKernel

KERNELS = [TritonKernel(name="triton-rmsnorm-autotuned8", op="rmsnorm", module="autotune8_kernel.py", launcher="launch",
                        dtypes=FLOAT_IO, math_mode="triton_approx")]

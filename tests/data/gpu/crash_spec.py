"""A kernel that faults (illegal address), for checking on a GPU that a crash in one pytest-xdist worker
leaves the other workers' results intact:

    pytest -n 2 suites/test_ops.py --verifier-specs tests/data/gpu/crash_spec.py --verifier-device cuda

A callable (it runs in the worker's process), launching crash.cu through the CUDA driver API.
"""
from pathlib import Path

from verifier.spec import CallableKernel, dtypes

_FN = None


def _fault(inputs, outputs, params, dt):
    global _FN
    import numpy as np

    from verifier.gpu import libcuda as cd
    from verifier.gpu.probe import device_arch
    from verifier.toolchain.nvcc import compile_cubin

    if _FN is None:
        _FN = cd.function(compile_cubin(Path(__file__).with_name("crash.cu"), arch=device_arch()).cubin, "bad")
    args, _keep = cd.kernel_params([np.uint64(16)])  # a store through address 16: illegal address
    cd.launch(_FN, (1,), (32,), args, name="bad")
    cd.synchronize()


KERNELS = [CallableKernel(name="gpu-crash-illegal-address", op="softmax", fn=_fault, dtypes=[dtypes("f32")],
                          device="cuda", description="writes through an invalid pointer")]

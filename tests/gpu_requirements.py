"""Why a GPU test cannot run here, said once for every tests/test_*_gpu.py file (they skip with these words)."""
from __future__ import annotations

import shutil
from typing import Optional


def gpu_and_nvcc_reason() -> Optional[str]:
    """None where an NVIDIA GPU, its driver and nvcc are present; else what is missing."""
    from verifier.gpu.probe import driver_device_count

    if driver_device_count() == 0:
        return "needs an NVIDIA GPU and its driver (libcuda sees no device)"
    if shutil.which("nvcc") is None:
        return "needs nvcc to build the CUDA kernels"
    return None

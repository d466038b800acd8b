"""layout.sm_count and layout.smem_optin: what a host reads of the device to pick a path or a grid (ggml's nsm picks
sum_rows' block size and the split-row softmax's grid, its smpbo whether softmax keeps the row in shared memory).
Before, a spec could only fix them (ggml's 132 SMs of an H100). On a launch they are the GPU's (here the fake
driver's H100: 132 SMs, 227 KiB); where no tensor exists (the build step, lint) the model device's, an sm_80 A100."""
import numpy as np
import pytest

from fake_libcuda import install
from verifier.declare.args import MODEL_SM_COUNT, MODEL_SMEM_OPTIN
from verifier.gpu import libcuda as cd
from verifier.launch import cuda as rc
from verifier.spec import CudaKernel, Launch, dtypes

F32 = dtypes("f32")
SEEN = []


def _launches(M, N, dt, p, layout):
    SEEN.append((layout.sm_count, layout.smem_optin))
    big = (N + 32) * 4 > layout.smem_optin  # ggml's choice: the row in shared memory when it fits
    return [Launch("scale_f32", (layout.sm_count,) if big else (M,), (32,), ("x", "w", "y", "M", "N"))]


SPEC = CudaKernel(name="by-device", op="rmsnorm", source="emulated.cu", launches=_launches, dtypes=[F32])


def test_the_model_device_where_no_tensor_exists():
    SEEN.clear()
    layout = rc.model_layout(SPEC, 4, 64, F32, SPEC.op_params())
    assert (layout.sm_count, layout.smem_optin) == (MODEL_SM_COUNT, MODEL_SMEM_OPTIN) == (108, 163 * 1024)
    (launch,) = rc.launches_for(SPEC, 2, 50000, F32, SPEC.op_params(), layout)
    assert launch.grid == (108,)  # 200 KB of row: past sm_80's opt-in limit


def test_the_gpus_own_on_a_launch(monkeypatch):
    SEEN.clear()
    install({"scale_f32": lambda lib, a: None}, monkeypatch.setattr)
    try:
        x, w, y = (rc.DeviceArray(cd.DeviceBuffer(n * 4), s) for n, s in ((2 * 50000, (2, 50000)), (50000, (50000,)),
                                                                          (2 * 50000, (2, 50000))))
        prepared = rc.prepare(SPEC, {"x": x, "w": w}, {"y": y}, SPEC.op_params(), F32)
        assert SEEN == [(132, 227 * 1024)]
        assert prepared.launches[0].launch.grid == (2,)  # 200 KB fits an H100's 227 KiB: one block per row
        prepared.close()
    finally:
        cd._primary.cache_clear()

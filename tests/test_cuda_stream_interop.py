"""torch tensors through the one CUDA runner: their device addresses, on torch's current stream, so torch's work on
them is ordered with the kernels. CPU: a fake libcuda (tests/fake_libcuda.py) records what reaches cuLaunchKernel;
GPU (skips without one): a torch op enqueued before the launch on the same non-default stream runs before it."""
from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from fake_libcuda import install
from test_launch_path import KERNELS, NORM, _one, _spec
from verifier.errors import UsageError
from verifier.gpu import libcuda as cd
from verifier.launch import cuda as rc
from verifier.spec import dtypes

ROOT = Path(__file__).resolve().parent.parent
F32 = dtypes("f32")
TORCH_STREAM = 0xD9A9430
torch = pytest.importorskip("torch")


@pytest.fixture
def lib(monkeypatch):
    fake = install(KERNELS, monkeypatch.setattr)
    # CPU tensors stand in for CUDA ones: their storage is "device" memory the fake's kernels may touch
    monkeypatch.setattr(rc, "tensor_address", lambda name, t: fake.add_host(t.data_ptr(), t.nbytes) or t.data_ptr())
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: SimpleNamespace(cuda_stream=TORCH_STREAM))
    yield fake
    cd._primary.cache_clear()


def _tensors(M=5, N=24):
    g = torch.Generator().manual_seed(0)
    return {"x": torch.randn(M, N, generator=g), "w": torch.randn(N, generator=g)}, {"y": torch.full((M, N), float("nan"))}


def test_torch_tensors_launch_at_their_addresses_on_torchs_current_stream(lib):
    spec = _spec("emu-scale", "rmsnorm", _one("scale", NORM), dts=(F32,))
    inputs, outputs = _tensors()
    rc.run_cuda(spec, inputs, outputs, spec.op_params(), F32, "cuda")
    (l,) = lib.launched
    assert l.stream == TORCH_STREAM and lib.synced == [TORCH_STREAM]
    assert l.values()[:3] == [inputs["x"].data_ptr(), inputs["w"].data_ptr(), outputs["y"].data_ptr()]
    want = (inputs["x"] * inputs["w"] * 1.5).numpy()
    assert np.array_equal(outputs["y"].numpy(), want)
    assert lib.calls.count("cuMemcpyHtoD") == 0  # no copies: the kernel works on the tensors themselves


def test_an_explicit_stream_wins_and_driver_buffers_take_the_default_stream(lib):
    spec = _spec("emu-scale", "rmsnorm", _one("scale", NORM), dts=(F32,))
    inputs, outputs = _tensors()
    assert rc.prepare(spec, inputs, outputs, spec.op_params(), F32, stream=7).stream == 7
    bufs = [cd.DeviceBuffer(5 * 24 * 4) for _ in range(3)]
    x, w, y = (rc.DeviceArray(b, (5, 24)) for b in bufs)
    assert rc.prepare(spec, {"x": x, "w": w}, {"y": y}, spec.op_params(), F32).stream == 0  # torch imported or not
    for b in bufs:
        b.close()


def test_a_tensor_that_is_not_on_cuda0_is_refused_with_the_fix():
    spec = _spec("emu-scale", "rmsnorm", _one("scale", NORM), dts=(F32,))
    inputs, outputs = _tensors()
    with pytest.raises(UsageError, match="tensor 'x' is on cpu") as e:
        rc.prepare(spec, inputs, outputs, spec.op_params(), F32, arch="sm_90")
    assert "cuda:0" in e.value.fix and "CUDA_VISIBLE_DEVICES" in e.value.fix
    with pytest.raises(UsageError, match="tensor 'x' is a ndarray") as e:
        rc.prepare(spec, {"x": np.zeros((5, 24), np.float32)}, {}, spec.op_params(), F32, arch="sm_90")
    assert "torch CUDA tensor" in e.value.fix


def _gpu_reason():
    from verifier.gpu.probe import driver_device_count

    if driver_device_count() == 0:
        return "needs an NVIDIA GPU and its driver (libcuda sees no device)"
    if shutil.which("nvcc") is None:
        return "needs nvcc to build the CUDA kernel"
    if not torch.cuda.is_available():
        return f"needs a CUDA build of torch (this is {torch.__version__})"
    return None


@pytest.mark.gpu
@pytest.mark.skipif(_gpu_reason() is not None, reason=_gpu_reason() or "")
@pytest.mark.parametrize("sync", [True, False])
def test_a_torch_op_enqueued_before_the_launch_on_the_same_stream_runs_before_it(sync):
    """On a non-blocking torch stream, ~0.1 s of spinning then the copy that fills x; the launch is enqueued at
    once. On the same stream the kernel sees x filled; on any other stream (the default one included: torch's
    pool streams do not wait for it) it would read the zeros and write 1/N everywhere."""
    from verifier.declare.registry import load_spec_file

    spec = next(k for k in load_spec_file(ROOT / "kernels" / "cuda" / "softmax_fast_spec.py")
                if k.name == "cuda-softmax-s5")
    M, N = 64, 4096
    src = torch.randn(M, N, device="cuda")
    x, y = torch.zeros_like(src), torch.full_like(src, float("nan"))
    rc.prepare(spec, {"x": x}, {"y": y}, {}, F32).close()  # build and load first: the spin must outlast the enqueue
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(500_000_000)
        x.copy_(src)
        prepared = rc.prepare(spec, {"x": x}, {"y": y}, {}, F32)
        assert prepared.stream == s.cuda_stream != 0
        rc.launch(prepared, sync=sync)
        if not sync:
            assert not s.query(), "the spin ended before the launch was enqueued: the test shows nothing"
    s.synchronize()
    ref = torch.softmax(src.double(), -1)
    assert torch.allclose(y.double(), ref, rtol=1e-5, atol=1e-9), (y[0, :4], ref[0, :4])

"""verifier.gpu.libcuda, the driver layer of the one CUDA launch path, no torch. CPU: argument packing, a missing
driver, workspaces; GPU (skips without a driver and nvcc): bundled softmax kernels on driver buffers against
float64, a missing entry, a refusal, and a process that never imports torch."""
import ctypes
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from verifier.gpu import libcuda as cd
from verifier.gpu.probe import driver_device_count
from verifier.launch.cuda import run_cuda
from verifier.launch.harness import execute
from verifier.errors import SpecError, ToolMissing, Unsupported
from verifier.spec import dtypes

ROOT = Path(__file__).resolve().parent.parent


def _spec_module(name):
    from verifier.declare.registry import load_spec_file

    return {k.name: k for k in load_spec_file(ROOT / "kernels" / "cuda" / f"{name}.py")}


def test_kernel_params_keep_each_scalar_width_and_pass_buffers_as_pointers():
    buf = cd.DeviceBuffer.__new__(cd.DeviceBuffer)  # no device: only the pointer field is read
    buf.ptr, buf.nbytes = 0x7F0012345600, 16
    ptrs, values = cd.kernel_params([buf, np.int32(-3), np.float32(1.5), np.int64(1 << 40), np.uint32(7)])
    assert [type(v) for v in values] == [ctypes.c_uint64, ctypes.c_int32, ctypes.c_float, ctypes.c_int64,
                                         ctypes.c_uint32]
    assert [v.value for v in values] == [0x7F0012345600, -3, 1.5, 1 << 40, 7]
    assert [ctypes.cast(p, ctypes.c_void_p).value for p in ptrs] == [ctypes.addressof(v) for v in values]
    buf.ptr = 0  # nothing to free


@pytest.mark.parametrize("bad", [3, 2.0, "x", np.float16(1.0), b""])  # float64 is a kind now (Scalar)
def test_kernel_params_refuse_values_without_a_width(bad):
    with pytest.raises(TypeError, match="numpy scalar"):
        cd.kernel_params([bad])


def test_no_driver_is_a_tool_missing_with_the_fix(monkeypatch):
    def no_lib(name, *a, **k):
        raise OSError(f"{name}: cannot open shared object file")

    cd._lib.cache_clear()
    monkeypatch.setattr(cd.ctypes, "CDLL", no_lib)
    try:
        with pytest.raises(ToolMissing, match="no CUDA driver") as e:
            cd.DeviceBuffer(16)
        assert "--device cpu" in e.value.fix
    finally:
        cd._lib.cache_clear()


def test_workspaces_are_sized_from_m_and_n_and_a_malformed_one_is_a_spec_error():
    from verifier.declare.kernels import workspace_of
    from verifier.spec import Workspace

    ws = Workspace("ms", lambda M, N: 2 * M * (N // 8192 + 1))
    assert workspace_of(ws) is ws and (ws.size(32, 152064), ws.dtype) == (2 * 32 * 19, "float32")
    old = workspace_of("tmp:ms:2*M*(N//8192+1):float32")  # the older string form is still read
    assert (old.name, old.size(32, 152064), old.dtype) == ("ms", 2 * 32 * 19, "float32")
    assert workspace_of("tmp:rstd:M:f32").size(7, 1) == 7 and workspace_of("x") is None
    for bad in ("tmp:ms:import os:float32", "tmp:ms:M:float13", "tmp:ms:M"):
        with pytest.raises(SpecError, match="malformed"):
            workspace_of(bad).size(1, 1)
    with pytest.raises(SpecError, match="gave -8 elements"):
        workspace_of("tmp:ms:M-9:float32").size(1, 1)
    with pytest.raises(SpecError, match="gave -3 elements"):
        Workspace("neg", lambda M, N: M - 4).size(1, 1)
    with pytest.raises(SpecError, match="neither an int nor a function"):
        Workspace("bad", "M")


needs_gpu = pytest.mark.skipif(driver_device_count() == 0 or shutil.which("nvcc") is None,
                               reason="needs an NVIDIA driver with a GPU (libcuda) and nvcc")


def _softmax64(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@needs_gpu
@pytest.mark.parametrize("kernel, tag, N", [("cuda-softmax-s5", "f32", 1000), ("cuda-softmax-s5", "bf16", 4096),
                                            ("cuda-softmax-split", "bf16", 20000)])
def test_bundled_softmax_through_the_driver_matches_float64(kernel, tag, N):
    from verifier.dtypes import numpy_dtype

    dt = dtypes(tag)
    io = numpy_dtype(dt.input)
    rng = np.random.default_rng(0)
    M = 37
    x = (rng.standard_normal((M, N)) * 3).astype(np.float32).astype(io)
    res = execute(run_cuda, _spec_module("softmax_fast_spec")[kernel], {"x": x}, dt, {}, "cuda")
    assert not res.unwritten and not res.guard_hits  # every element written, nothing past the ends
    y = res.outputs["y"].astype(np.float64)
    assert not np.isnan(y).any()  # every element written
    xf = x.astype(np.float32).astype(np.float64)
    ref = _softmax64(xf)
    # Relative bound: the output's rounding (u_out = half an ulp of the I/O type) plus the fp32 arithmetic in units
    # of u = 2^-24: x - m rounded (|x - m| u, through exp), expf 2 ulp, a sum of N terms in a tree of depth
    # ceil(log2 N) (each level u), the correctly rounded division (u).
    u = 2.0 ** -24
    u_out = u if tag == "f32" else 2.0 ** -8
    k = np.abs(xf - xf.max(axis=-1, keepdims=True)) + 2 * 2 + np.ceil(np.log2(N)) + 1
    bound = (u_out * (1 + k * u) + k * u) * np.abs(ref) + np.finfo(np.float32).tiny
    assert np.all(np.abs(y - ref) <= bound), np.max(np.abs(y - ref) / bound)


@needs_gpu
def test_a_missing_entry_names_the_call_and_the_driver_error():
    from verifier.gpu.probe import device_arch
    from verifier.launch.cuda import build

    spec = _spec_module("softmax_fast_spec")["cuda-softmax-s5"]
    cubin = build(spec, device_arch(), dtypes("f32")).cubin
    with pytest.raises(cd.DriverError, match=r"cuModuleGetFunction\('no_such_entry'\) failed: CUDA_ERROR_NOT_FOUND"):
        cd.function(cubin, "no_such_entry")


@needs_gpu
def test_a_refused_shape_raises_unsupported_before_any_launch():
    with pytest.raises(Unsupported, match="multiple of the 8-element"):
        execute(run_cuda, _spec_module("softmax_fast_spec")["cuda-softmax-s5"], {"x": np.zeros((2, 12), np.float16)},
                dtypes("f16"), {}, "cuda")


@needs_gpu
def test_the_launch_path_on_driver_buffers_imports_no_torch():
    code = ("import sys, numpy as np; from verifier.launch.harness import execute; "
            "from verifier.launch.cuda import run_cuda; from verifier.spec import dtypes; "
            "from verifier.declare.registry import load_spec_file; "
            "k = load_spec_file('kernels/cuda/softmax_fast_spec.py')[0]; x = np.ones((4, 256), np.float32); "
            "r = execute(run_cuda, k, {'x': x}, dtypes('f32'), {}, 'cuda'); "
            "assert abs(r.outputs['y'].sum() - 4) < 1e-4 and not r.unwritten; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"

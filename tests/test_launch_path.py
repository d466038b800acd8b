"""The two launch bodies of verifier.launch.harness on a CPU: CUDA kernels emulated in Python on raw memory, launched
once through the torch body (torch CPU tensors, a fake CuPy standing in for the GPU) and once through the driver
body (numpy buffers, a fake libcuda standing in for the driver), must leave the same bits, the same unwritten
masks and the same guard hits, for guards, both poisons, in-out tensors, tmp workspaces, scalars, several
launches, int64 labels, refusals and faults. Also: the switch ($VERIFIER_CUDA_LAUNCH) and the no-torch child.

The emulated kernels read and write through the pointers they are given, so the guard offsets and the buffer
layout are exercised as on a GPU: a pointer outside every allocation is an illegal address."""
from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest

from verifier.gpu import libcuda as cd
from verifier.gpu import probe
from verifier.launch import harness
from verifier.launch import path as launch_path
from verifier.errors import SpecError, Unsupported, UsageError
from verifier.launch.harness import GUARD_BYTES, KernelFault, execute
from verifier.launch import cuda as rc
from verifier.launch import cuda_numpy as cn
from verifier.spec import CudaKernel, Launch, Scalar, dtypes

ROOT = Path(__file__).resolve().parent.parent
F32, BF16 = dtypes("f32"), dtypes("bf16")
_IO = {"f32": np.float32, "bf16": ml_dtypes.bfloat16}


class Illegal(Exception):
    pass


class Memory:
    """Allocations the emulated kernels may touch: [start, start + nbytes) ranges of host memory."""

    def __init__(self):
        self.regions: list = []

    def add(self, start: int, nbytes: int):
        self.regions.append((int(start), int(nbytes)))

    def view(self, ptr, dtype, count: int) -> np.ndarray:
        dtype = np.dtype(dtype)
        ptr, nbytes = int(ptr), count * dtype.itemsize
        if not any(s <= ptr and ptr + nbytes <= s + n for s, n in self.regions):
            raise Illegal(f"{nbytes} bytes at {ptr:#x}")
        raw = (ctypes.c_uint8 * max(nbytes, 1)).from_address(ptr)
        return np.frombuffer(raw, dtype=np.uint8, count=nbytes).view(dtype)


MEM = Memory()


# --- emulated kernels: fn(args, tag) with args as the launch passes them (pointers as np.uint64) -------------
def _io(tag):
    return _IO[tag.split("to")[0]]


def _rows(args, tag):
    x, w, y, M, N = args[0], args[1], args[2], int(args[3]), int(args[4])
    io = _io(tag)
    xs = MEM.view(x, io, M * N).astype(np.float32).reshape(M, N)
    ws = MEM.view(w, io, N).astype(np.float32)
    MEM.view(y, io, M * N)[:] = (xs * ws * np.float32(1.5)).astype(io).reshape(-1)


def k_scale(args, tag):
    _rows(args, tag)


def k_overrun(args, tag):  # one element past the end of y
    _rows(args, tag)
    io, M, N = _io(tag), int(args[3]), int(args[4])
    MEM.view(int(args[2]) + M * N * np.dtype(io).itemsize, io, 1)[0] = 0


def k_underrun(args, tag):  # one element before the start of y
    _rows(args, tag)
    io = _io(tag)
    MEM.view(int(args[2]) - np.dtype(io).itemsize, io, 1)[0] = 0


def k_skip_last(args, tag):  # leaves y[M-1, N-1] unwritten
    x, w, y, M, N = args[0], args[1], args[2], int(args[3]), int(args[4])
    io = _io(tag)
    full = np.empty(M * N, dtype=io)
    MEM.add(full.ctypes.data, full.nbytes)
    _rows((x, w, np.uint64(full.ctypes.data), M, N), tag)
    MEM.view(y, io, M * N - 1)[:] = full[:-1]


def k_rstd(args, tag):  # (x, tmp, M, N, eps): first of two launches
    x, t, M, N, eps = args[0], args[1], int(args[2]), int(args[3]), float(args[4])
    xs = MEM.view(x, _io(tag), M * N).astype(np.float32).reshape(M, N)
    MEM.view(t, np.float32, M)[:] = 1 / np.sqrt((xs * xs).mean(axis=1) + np.float32(eps))


def k_norm(args, tag):  # (x, w, tmp, y, M, N)
    x, w, t, y, M, N = args[0], args[1], args[2], args[3], int(args[4]), int(args[5])
    io = _io(tag)
    xs = MEM.view(x, io, M * N).astype(np.float32).reshape(M, N)
    r = MEM.view(t, np.float32, M)
    MEM.view(y, io, M * N)[:] = (xs * r[:, None] * MEM.view(w, io, N).astype(np.float32)).astype(io).reshape(-1)


def k_times_scalar(args, tag):  # (x, w, y, M, N, k: int32, f: float32)
    x, w, y, M, N, k, f = args[0], args[1], args[2], int(args[3]), int(args[4]), args[5], args[6]
    assert type(k) is np.int32 and type(f) is np.float32  # the widths the launch passes
    io = _io(tag)
    MEM.view(y, io, M * N)[:] = (MEM.view(x, io, M * N).astype(np.float32) * k * f).astype(io)


def k_fused_add(args, tag):  # (x, residual, w, y, M, N, eps): residual += x; y = residual * w
    x, res, w, y, M, N = args[0], args[1], args[2], args[3], int(args[4]), int(args[5])
    io = _io(tag)
    h = (MEM.view(x, io, M * N).astype(np.float32) + MEM.view(res, io, M * N).astype(np.float32)).astype(io)
    MEM.view(res, io, M * N)[:] = h
    MEM.view(y, io, M * N)[:] = (h.astype(np.float32).reshape(M, N) * MEM.view(w, io, N).astype(np.float32)
                                 ).astype(io).reshape(-1)


def k_cross_entropy(args, tag):  # (x, labels: int64, loss, M, N, ignore_index: int64)
    x, lab, loss, M, N, ign = args[0], args[1], args[2], int(args[3]), int(args[4]), args[5]
    assert type(ign) is np.int64
    io = _io(tag)
    xs = MEM.view(x, io, M * N).astype(np.float32).reshape(M, N)
    t = MEM.view(lab, np.int64, M)
    out = MEM.view(loss, np.float32, M)
    for i in range(M):
        out[i] = 0.0 if t[i] == ign else np.float32(-xs[i, t[i]])


def k_fault(args, tag):
    MEM.view(16, np.float32, 1)[0] = 1.0


KERNELS = {"scale": k_scale, "overrun": k_overrun, "underrun": k_underrun, "skip_last": k_skip_last,
           "rstd": k_rstd, "norm": k_norm, "times_scalar": k_times_scalar, "fused_add": k_fused_add,
           "cross_entropy": k_cross_entropy, "fault": k_fault}
_ILLEGAL = "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"


def _emulate(entry, args):
    name, tag = entry.rsplit("_", 1)
    try:
        KERNELS[name](args, tag)
    except Illegal:
        return False
    return True


# --- the fake driver (numpy memory) and the fake CuPy (torch CPU tensors) ------------------------------------
class FakeBuffer:
    live: set = set()

    def __init__(self, nbytes):
        self.nbytes = max(int(nbytes), 1)
        self.mem = np.full(self.nbytes, 0xCD, dtype=np.uint8)  # cuMemAlloc leaves garbage
        self.ptr = self.mem.ctypes.data
        MEM.add(self.ptr, self.nbytes)
        FakeBuffer.live.add(id(self))

    @classmethod
    def from_array(cls, arr):
        b = cls(arr.nbytes)
        b.mem[: arr.nbytes] = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        return b

    def download(self, dtype, shape):
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        return self.mem[:n].copy().view(dtype).reshape(shape)

    def close(self):
        FakeBuffer.live.discard(id(self))


def _fake_launch(fn, grid, block, args, smem=0, name="kernel"):
    if not _emulate(fn, args):
        raise cd.LaunchError(f"launch {name} (synchronize) failed: {_ILLEGAL}", _ILLEGAL)


def _fake_function(cubin, entry):
    if entry.rsplit("_", 1)[0] not in KERNELS:
        raise cd.DriverError(f"cuModuleGetFunction({entry!r}) failed: CUDA_ERROR_NOT_FOUND: named symbol not found",
                             "CUDA_ERROR_NOT_FOUND: named symbol not found")
    return entry


class CUDADriverError(RuntimeError):  # what CuPy raises
    pass


class FakeCupy:
    class RawModule:
        def __init__(self, path):
            self.path = path

        def get_function(self, entry):
            if entry.rsplit("_", 1)[0] not in KERNELS:
                raise CUDADriverError("CUDA_ERROR_NOT_FOUND: named symbol not found")

            def fn(grid, block, args, shared_mem=0):  # asynchronous, as on a GPU: the fault shows at synchronize
                if not _emulate(entry, args):
                    _PENDING.append(CUDADriverError(_ILLEGAL))
            return fn


_PENDING: list = []


class _Stream:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def synchronize(self):
        if _PENDING:
            raise _PENDING.pop()


@pytest.fixture
def fakes(monkeypatch):
    torch = pytest.importorskip("torch")
    fake_build = lambda spec, arch, dt=None: SimpleNamespace(cubin=Path("/nonexistent/fake.cubin"))  # noqa: E731
    monkeypatch.setattr(cd, "DeviceBuffer", FakeBuffer)
    monkeypatch.setattr(cd, "launch", _fake_launch)
    monkeypatch.setattr(cd, "function", _fake_function)
    monkeypatch.setattr(probe, "device_arch", lambda: "sm_90")
    monkeypatch.setattr(cn, "build", fake_build)
    monkeypatch.setattr(rc, "build", fake_build)
    monkeypatch.setattr(rc, "_cupy", lambda: FakeCupy)
    monkeypatch.setattr(rc, "_MODULES", {})
    monkeypatch.setattr(rc, "torch_stream_for_cupy", lambda cp, s: _Stream())
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: None)

    def cpu_tmp(cache, ws, M, N):
        if ws.name not in cache:
            cache[ws.name] = torch.empty(ws.size(M, N), dtype=getattr(torch, ws.dtype))
            MEM.add(cache[ws.name].data_ptr(), max(cache[ws.name].nbytes, 1))
        return cache[ws.name]

    monkeypatch.setattr(rc, "_tmp", cpu_tmp)
    monkeypatch.setenv(launch_path.ENV, "driver")
    MEM.regions.clear()
    yield
    MEM.regions.clear()


def torch_run(spec, inputs, outputs, params, dt, device):
    """The CUDA runner's torch body on CPU tensors: prepare + launch exactly as on a GPU, through the fake CuPy."""
    for t in (*inputs.values(), *outputs.values()):
        st = t.untyped_storage()
        MEM.add(st.data_ptr(), st.nbytes())
    rc.launch(rc.prepare(spec, inputs, outputs, params, dt, arch="sm_90"), sync=True)


def _spec(name, op, launches, dts=(F32, BF16), **kw):
    return CudaKernel(name=name, op=op, source="emulated.cu", launches=launches, dtypes=list(dts), **kw)


def _one(entry, args):
    return lambda M, N, dt, params: [Launch(entry=f"{entry}_{dt.tag}", grid=(M,), block=(32,), args=args)]


NORM = ("x", "w", "y", "M", "N")
SPECS = {
    "scale": _spec("emu-scale", "rmsnorm", _one("scale", NORM)),
    "overrun": _spec("emu-overrun", "rmsnorm", _one("overrun", NORM)),
    "underrun": _spec("emu-underrun", "rmsnorm", _one("underrun", NORM)),
    "skip_last": _spec("emu-skip-last", "rmsnorm", _one("skip_last", NORM)),
    "two_launches_tmp": _spec("emu-two", "rmsnorm", lambda M, N, dt, p: [
        Launch(entry=f"rstd_{dt.tag}", grid=(M,), block=(32,), args=("x", "tmp:rstd:M:float32", "M", "N", "eps")),
        Launch(entry=f"norm_{dt.tag}", grid=(M,), block=(32,), args=("x", "w", "tmp:rstd:M:float32", "y", "M", "N"))]),
    "scalars": _spec("emu-scalars", "rmsnorm",
                     _one("times_scalar", NORM + (Scalar("int32", 3), Scalar("float32", 0.25)))),
    "inout": _spec("emu-fused", "fused_add_rmsnorm", _one("fused_add", ("x", "residual", "w", "y", "M", "N", "eps"))),
    "labels": _spec("emu-ce", "cross_entropy", lambda M, N, dt, p: [Launch(
        entry=f"cross_entropy_{dt.tag}", grid=(M,), block=(32,),
        args=("x", "labels", "loss", "M", "N", Scalar("int64", p["ignore_index"])))],
        dts=(dtypes("f32"), dtypes("bf16", "f32"))),
}


def _inputs(spec, dt, M=5, N=24, seed=0):
    from verifier.inputs.cases import random_inputs

    return random_inputs(spec, dt, M, N, np.random.default_rng(seed))


def _both(spec, dt, xs, **kw):
    params = spec.op_params()
    t = execute(torch_run, spec, xs, dt, params, "cpu", **kw)
    d = execute(rc.run_cuda, spec, xs, dt, params, "cuda", **kw)
    return t, d


def _same(t, d):
    assert sorted(t.outputs) == sorted(d.outputs)
    for name in t.outputs:
        assert t.outputs[name].dtype == d.outputs[name].dtype and t.outputs[name].shape == d.outputs[name].shape
        assert t.outputs[name].tobytes() == d.outputs[name].tobytes(), name
    assert sorted(t.unwritten) == sorted(d.unwritten)
    for name in t.unwritten:
        assert np.array_equal(t.unwritten[name], d.unwritten[name])
    assert t.guard_hits == d.guard_hits


@pytest.mark.parametrize("case", sorted(SPECS))
def test_the_driver_body_leaves_the_bits_and_findings_of_the_torch_body(fakes, case):
    spec = SPECS[case]
    for dt in spec.dtypes:
        xs = _inputs(spec, dt)
        t, d = _both(spec, dt, xs)
        _same(t, d)
        if case == "overrun":
            assert d.guard_hits == {"y": [("after", 0)]} and not d.unwritten
        elif case == "underrun":
            assert d.guard_hits == {"y": [("before", np.dtype(_IO[dt.tag]).itemsize)]}
        elif case == "skip_last":
            mask = d.unwritten["y"]
            assert mask.sum() == 1 and mask[-1, -1] and not d.guard_hits
        else:  # correct kernels: everything written, no guard touched, values as emulated
            assert not d.unwritten and not d.guard_hits
        if case == "inout":
            h = (xs["x"].astype(np.float32) + xs["residual"].astype(np.float32)).astype(xs["x"].dtype)
            assert d.outputs["residual"].tobytes() == h.tobytes()
        if case == "labels":
            assert xs["labels"].dtype == np.int64
            ign = xs["labels"] == -100
            assert ign.any() and not d.unwritten and np.all(d.outputs["loss"][ign] == 0)


def test_both_poisons_and_determinism_repeats_go_through_the_driver_body(fakes):
    spec, dt = SPECS["skip_last"], BF16
    xs = _inputs(spec, dt)
    first = harness._run_once(rc.run_cuda, spec, harness.get_op(spec.op), xs, dt, {"eps": 1e-6}, "cuda", 0)
    second = harness._run_once(rc.run_cuda, spec, harness.get_op(spec.op), xs, dt, {"eps": 1e-6}, "cuda", 1)
    p0, p1 = (harness._signed(p, 2) for p in harness._POISON["bfloat16"])
    assert first.outputs["y"].view(np.int16)[-1, -1] == p0 and second.outputs["y"].view(np.int16)[-1, -1] == p1
    runs = [execute(rc.run_cuda, spec, xs, dt, spec.op_params(), "cuda", check_poison=False) for _ in range(3)]
    assert all(r.outputs["y"].tobytes() == runs[0].outputs["y"].tobytes() for r in runs)


def test_guarded_buffers_put_the_output_one_guard_past_the_start():
    for dtype in ("float32", "bfloat16", "float8_e4m3fn", "float64"):
        b = harness.guarded((3, 5), dtype, harness._POISON[dtype][0])
        itemsize = b.host.itemsize
        assert b.g * itemsize == GUARD_BYTES and b.n == 15 and b.host.size == 15 + 2 * b.g
        assert np.all(b.host == b.poison) and b.host.dtype == np.dtype(f"int{8 * itemsize}")
    mid = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = harness.guarded((2, 3), "float32", harness._POISON["float32"][1], mid)
    assert b.host[b.g:b.g + 6].view(np.float32).tolist() == [0, 1, 2, 3, 4, 5]
    assert np.all(b.host[:b.g] == b.poison) and np.all(b.host[b.g + 6:] == b.poison)


def test_a_fault_is_a_cuda_kernel_fault_on_both_bodies_with_the_same_message(fakes):
    spec = _spec("emu-fault", "rmsnorm", _one("fault", NORM), dts=(F32,))
    xs = _inputs(spec, F32)
    faults = []
    for run, device in ((torch_run, "cpu"), (rc.run_cuda, "cuda")):
        with pytest.raises(KernelFault) as e:
            execute(run, spec, xs, F32, spec.op_params(), device)
        assert e.value.cuda
        faults.append(str(e.value))
    assert faults[0] == faults[1] == (f"RuntimeError: CUDA error after launch fault_f32 grid=(5,) block=(32,): "
                                      f"{_ILLEGAL}")
    assert not FakeBuffer.live  # every device buffer freed after the fault


def test_refusals_and_spec_errors_are_the_same_verifier_errors_on_both_bodies(fakes):
    refusing = _spec("emu-refuse", "rmsnorm", _one("scale", NORM), dts=(F32,),
                     supports=lambda M, N, dt: "N must be a multiple of 64" if N % 64 else None)
    missing = _spec("emu-missing", "rmsnorm", _one("no_such_entry", NORM), dts=(F32,))
    bad_arg = _spec("emu-bad-arg", "rmsnorm", _one("scale", ("x", "w", "q", "M", "N")), dts=(F32,))
    bad_tmp = _spec("emu-bad-tmp", "rmsnorm", _one("scale", ("x", "w", "tmp:t:import os:float32", "M", "N")), dts=(F32,))
    for spec, err, match in ((refusing, Unsupported, "multiple of 64"), (missing, SpecError, "not found in"),
                             (bad_arg, SpecError, "has argument 'q'"), (bad_tmp, SpecError, "malformed")):
        xs = _inputs(spec, F32)
        for run, device in ((torch_run, "cpu"), (rc.run_cuda, "cuda")):
            with pytest.raises(err, match=match):
                execute(run, spec, xs, F32, spec.op_params(), device)
    assert not FakeBuffer.live


def test_the_switch(monkeypatch):
    spec = SPECS["scale"]
    monkeypatch.setitem(launch_path._preferred, "auto", "torch")
    monkeypatch.delenv(launch_path.ENV, raising=False)
    assert launch_path.mode() == "torch" and not harness.uses_driver(spec, rc.run_cuda, "cuda")
    launch_path.prefer_driver()  # what the check child does
    assert launch_path.mode() == "driver" and harness.uses_driver(spec, rc.run_cuda, "cuda")
    assert not harness.uses_driver(spec, torch_run, "cuda")  # a custom launcher keeps the torch body
    assert not harness.uses_driver(spec, rc.run_cuda, "cpu")
    triton_like = SimpleNamespace(kind="triton")
    assert not launch_path.driver_for(triton_like, "cuda")
    monkeypatch.setenv(launch_path.ENV, "torch")
    assert launch_path.mode() == "torch" and not harness.uses_driver(spec, rc.run_cuda, "cuda")
    monkeypatch.setenv(launch_path.ENV, "DRIVER")
    assert launch_path.mode() == "driver"
    monkeypatch.setenv(launch_path.ENV, "cupy")
    with pytest.raises(UsageError, match="VERIFIER_CUDA_LAUNCH='cupy'") as e:
        launch_path.mode()
    assert "VERIFIER_CUDA_LAUNCH=torch" in e.value.fix


_DRY = r"""
import sys
sys.path.insert(0, "tests")
import numpy as np
from verifier.isolation import child as isolate_child  # the check child's imports
from verifier.gpu import probe
from verifier.launch.path import prefer_driver
from verifier.battery import check_kernel
from verifier.results.options import Options
from verifier.declare.registry import load_spec_file
prefer_driver()
specs = load_spec_file("kernels/cuda/softmax_fast_spec.py") + load_spec_file("kernels/cuda/rmsnorm_spec.py")
for k in specs:  # supports() of every kernel, the cluster kernel's capability probe included
    k.check_supported(64, 4096, k.dtypes[0])
import test_launch_path as t  # the fake driver: the driver body on numpy, no GPU
t.install_driver_fakes()
from verifier.launch.harness import execute
from verifier.launch.cuda import run_cuda
spec = t.SPECS["two_launches_tmp"]
out = execute(run_cuda, spec, t._inputs(spec, t.BF16), t.BF16, spec.op_params(), "cuda")
assert not out.unwritten and not out.guard_hits
rms = [k for k in load_spec_file("kernels/cuda/rmsnorm_spec.py") if k.name == "cuda-rmsnorm-n3"][0]
check_kernel(rms, Options(budget="quick", device="cpu"))  # build, resources, static: the CPU half of a check
print(sorted(m for m in ("torch", "cupy", "hypothesis", "triton") if m in sys.modules))
"""


def install_driver_fakes():
    """The fakes of the driver body only (no torch), for a child process."""
    cd.DeviceBuffer, cd.launch, cd.function = FakeBuffer, _fake_launch, _fake_function
    probe.device_arch = lambda: "sm_90"
    cn.build = lambda spec, arch, dt=None: SimpleNamespace(cubin=Path("/nonexistent/fake.cubin"))


def test_the_check_child_imports_no_torch_cupy_hypothesis_or_triton_on_the_cuda_path():
    """The CPU-side part of a quick check child of a CUDA kernel (its imports, spec loading, build, static, and
    the driver body on a faked driver) leaves torch, CuPy, Hypothesis and Triton unimported."""
    import shutil

    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc for the build step of the check")
    out = subprocess.run([sys.executable, "-c", _DRY], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"

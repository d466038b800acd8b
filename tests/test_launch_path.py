"""The one CUDA launch path on a CPU: verifier.launch.cuda and the harness's device body over a fake libcuda
(tests/fake_libcuda.py) that records what reaches cuLaunchKernel and runs emulated kernels on host memory.
Argument values and widths, grid/block/smem, stream, workspaces (size, dtype, one buffer per name across
launches, freed after the call), refusal before any driver call, SpecErrors, the fault message; guards, poisons,
in-out tensors and int64 labels through driver buffers; the retired $VERIFIER_CUDA_LAUNCH; a check child without
torch, CuPy, Hypothesis or Triton."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from ctypes import c_float, c_int32, c_int64, c_uint32, c_uint64
from pathlib import Path
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest

from fake_libcuda import ILLEGAL_TEXT, OUT_OF_RESOURCES, install
from child_sessions import NO_HYPOTHESIS_PLUGIN
from verifier.errors import SpecError, ToolMissing, Unsupported
from verifier.gpu import libcuda as cd
from verifier.launch import cuda as rc
from verifier.launch import harness
from verifier.launch.harness import GUARD_BYTES, KernelFault, execute, is_cuda_fault
from verifier.spec import CudaKernel, Launch, Scalar, Workspace, dtypes

ROOT = Path(__file__).resolve().parent.parent
F32, BF16 = dtypes("f32"), dtypes("bf16")
_IO = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "bf16tof32": ml_dtypes.bfloat16}  # by tag: the input's


# --- emulated kernels: fn(lib, args), args as cuLaunchKernel passed them; the entry ends in _<dtype tag> ----------
def _scale(lib, a, io):  # (x, w, y, M, N): y = x * w * 1.5
    x, w, y, M, N = a[:5]
    xs = lib.view(x, io, M * N).astype(np.float32).reshape(M, N)
    lib.view(y, io, M * N)[:] = (xs * lib.view(w, io, N).astype(np.float32) * np.float32(1.5)).astype(io).reshape(-1)


def _overrun(lib, a, io):  # also one element past the end of y
    _scale(lib, a, io)
    lib.view(a[2] + a[3] * a[4] * np.dtype(io).itemsize, io, 1)[0] = 0


def _underrun(lib, a, io):  # also one element before y
    _scale(lib, a, io)
    lib.view(a[2] - np.dtype(io).itemsize, io, 1)[0] = 0


def _skip_last(lib, a, io):  # y[M-1, N-1] never stored
    keep = lib.view(a[2] + (a[3] * a[4] - 1) * np.dtype(io).itemsize, io, 1).copy()
    _scale(lib, a, io)
    lib.view(a[2] + (a[3] * a[4] - 1) * np.dtype(io).itemsize, io, 1)[:] = keep


def _rstd(lib, a, io):  # (x, rstd workspace, M, N, eps)
    x, t, M, N, eps = a
    xs = lib.view(x, io, M * N).astype(np.float32).reshape(M, N)
    lib.view(t, np.float32, M)[:] = 1 / np.sqrt((xs * xs).mean(axis=1) + np.float32(eps))


def _norm(lib, a, io):  # (x, w, rstd workspace, y, M, N)
    x, w, t, y, M, N = a
    xs = lib.view(x, io, M * N).astype(np.float32).reshape(M, N)
    r = lib.view(t, np.float32, M)[:, None]
    lib.view(y, io, M * N)[:] = (xs * r * lib.view(w, io, N).astype(np.float32)).astype(io).reshape(-1)


def _fused_add(lib, a, io):  # (x, residual, w, y, M, N, eps): residual += x; y = residual * w
    x, res, w, y, M, N = a[:6]
    h = (lib.view(x, io, M * N).astype(np.float32) + lib.view(res, io, M * N).astype(np.float32)).astype(io)
    lib.view(res, io, M * N)[:] = h
    lib.view(y, io, M * N)[:] = (h.astype(np.float32).reshape(M, N) * lib.view(w, io, N).astype(np.float32)
                                 ).astype(io).reshape(-1)


def _cross_entropy(lib, a, io):  # (x, labels int64, loss f32, M, N, ignore_index int64): loss = -x[label]
    x, lab, loss, M, N, ign = a
    xs = lib.view(x, io, M * N).astype(np.float32).reshape(M, N)
    t = lib.view(lab, np.int64, M)
    lib.view(loss, np.float32, M)[:] = [0.0 if t[i] == ign else -xs[i, t[i]] for i in range(M)]


def _fault(lib, a, io):
    lib.view(16, np.float32, 1)[0] = 1.0


def _nothing(lib, a, io):
    pass


_BODIES = {"scale": _scale, "overrun": _overrun, "underrun": _underrun, "skip_last": _skip_last, "rstd": _rstd,
           "norm": _norm, "fused_add": _fused_add, "cross_entropy": _cross_entropy, "fault": _fault,
           "nothing": _nothing}
KERNELS = {f"{name}_{tag}": (lambda body, io: lambda lib, a: body(lib, a, io))(body, io)
           for name, body in _BODIES.items() for tag, io in _IO.items()}


@pytest.fixture
def lib(monkeypatch):
    fake = install(KERNELS, monkeypatch.setattr)
    yield fake
    cd._primary.cache_clear()


def _spec(name, op, launches, dts=(F32, BF16), **kw):
    return CudaKernel(name=name, op=op, source="emulated.cu", launches=launches, dtypes=list(dts), **kw)


def _one(entry, args, **kw):
    return lambda M, N, dt, params: [Launch(entry=f"{entry}_{dt.tag}", grid=(M,), block=(32,), args=args, **kw)]


NORM = ("x", "w", "y", "M", "N")
RSTD = Workspace("rstd", lambda M, N: M)  # float32 by default


def _inputs(spec, dt, M=5, N=24, seed=0):
    from verifier.inputs.cases import random_inputs

    return random_inputs(spec, dt, M, N, np.random.default_rng(seed))


def _run(spec, dt, xs, **kw):
    return execute(rc.run_cuda, spec, xs, dt, spec.op_params(), "cuda", **kw)


# --- what reaches cuLaunchKernel ------------------------------------------------------------------------------
def test_two_launches_share_one_uninitialized_workspace_and_pass_each_argument_at_its_width(lib):
    spec = _spec("emu-two", "rmsnorm", lambda M, N, dt, p: [
        Launch(entry=f"rstd_{dt.tag}", grid=(M,), block=(32,), args=("x", RSTD, "M", "N", "eps")),
        Launch(entry=f"norm_{dt.tag}", grid=(M, 2), block=(32, 4), args=("x", "w", RSTD, "y", "M", "N"))])
    xs = _inputs(spec, F32)
    out = _run(spec, F32, xs, check_poison=False)
    first, second = lib.launched
    assert (first.entry, first.grid, first.block, first.smem, first.stream) == ("rstd_f32", (5, 1, 1), (32, 1, 1), 0, 0)
    assert (second.entry, second.grid, second.block) == ("norm_f32", (5, 2, 1), (32, 4, 1))
    assert first.types() == [c_uint64, c_uint64, c_int32, c_int32, c_float]
    assert second.types() == [c_uint64] * 4 + [c_int32] * 2
    x_ptr, ws_ptr, M, N, eps = first.values()
    assert (M, N) == (5, 24) and eps == float(np.float32(spec.op_params()["eps"]))
    # allocations in order: the inputs x and w, y's guarded buffer, then the workspace (M float32s, not uploaded)
    (x_at, x_n), (w_at, w_n), (y_at, y_n), (ws_at, ws_n) = lib.alloc_log
    G = 2 * GUARD_BYTES  # inputs and outputs sit between guards; the workspace does not
    assert (x_n, w_n, y_n, ws_n) == (G + 5 * 24 * 4, G + 24 * 4, G + 5 * 24 * 4, 5 * 4)
    assert (x_ptr, ws_ptr) == (x_at + GUARD_BYTES, ws_at)
    assert second.values()[:4] == [x_at + GUARD_BYTES, w_at + GUARD_BYTES, ws_at, y_at + GUARD_BYTES]
    assert lib.calls.count("cuMemcpyHtoD") == 3  # one upload per input and per guarded buffer; none of the workspace
    assert lib.synced == [0, 0]  # the default stream, synchronized after each launch
    assert not lib.allocs  # buffers and workspace freed after the call
    x = xs["x"].astype(np.float32)
    r = 1 / np.sqrt((x * x).mean(axis=1) + np.float32(spec.op_params()["eps"]))
    assert np.array_equal(out.outputs["y"], (x * r[:, None] * xs["w"]).astype(np.float32))


def test_workspace_sizes_follow_their_dtype_and_each_call_gets_its_own(lib):
    spec = _spec("emu-ws", "rmsnorm", _one("nothing", ("x", Workspace("a", lambda M, N: 2 * M * N, "int64"),
                                                       Workspace("b", 3, "bfloat16"), "y")), dts=(F32,))
    for _ in range(2):
        _run(spec, F32, _inputs(spec, F32), check_poison=False)
    sizes = [n for _, n in lib.alloc_log]
    G = 2 * GUARD_BYTES
    assert sizes == [G + 5 * 24 * 4, G + 24 * 4, G + 5 * 24 * 4, 2 * 5 * 24 * 8, 3 * 2] * 2
    assert not lib.allocs


def test_scalars_keep_their_kind_and_width(lib):
    args = NORM + (Scalar("int32", -3), Scalar("int64", 1 << 40), Scalar("uint32", 7), Scalar("float32", 0.25))
    spec = _spec("emu-scalars", "rmsnorm", _one("scale", args), dts=(F32,))
    _run(spec, F32, _inputs(spec, F32), check_poison=False)
    (l,) = lib.launched
    assert l.types()[3:] == [c_int32, c_int32, c_int32, c_int64, c_uint32, c_float]
    assert l.values()[5:] == [-3, 1 << 40, 7, 0.25]


def test_dynamic_shared_memory_above_48_kib_raises_the_attribute_before_the_launch(lib):
    big = _spec("emu-big-smem", "rmsnorm", _one("scale", NORM, smem=64 * 1024), dts=(F32,))
    small = _spec("emu-48k", "rmsnorm", _one("scale", NORM, smem=48 * 1024), dts=(F32,))
    _run(small, F32, _inputs(small, F32), check_poison=False)
    assert lib.attributes == [] and lib.launched[-1].smem == 48 * 1024
    lib.calls.clear()
    _run(big, F32, _inputs(big, F32), check_poison=False)
    assert lib.attributes == [("scale_f32", 8, 64 * 1024)] and lib.launched[-1].smem == 64 * 1024
    assert lib.calls.index("cuFuncSetAttribute") < lib.calls.index("cuLaunchKernel")


# --- guards, poisons, in-out tensors and labels through driver buffers -----------------------------------------
@pytest.mark.parametrize("dt", [F32, BF16], ids=lambda d: d.tag)
def test_guards_and_poisons_of_driver_buffers(lib, dt):
    itemsize = np.dtype(_IO[dt.tag]).itemsize
    found = {}
    for name in ("scale", "overrun", "underrun", "skip_last"):
        spec = _spec(f"emu-{name.replace('_', '-')}", "rmsnorm", _one(name, NORM))
        found[name] = _run(spec, dt, _inputs(spec, dt))
    assert not found["scale"].unwritten and not found["scale"].guard_hits
    assert found["overrun"].guard_hits == {"y": [("after", 0)]} and not found["overrun"].unwritten
    assert found["underrun"].guard_hits == {"y": [("before", itemsize)]}
    mask = found["skip_last"].unwritten["y"]  # confirmed by the second poison: a second run happened
    assert mask.sum() == 1 and mask[-1, -1] and not found["skip_last"].guard_hits
    assert not lib.allocs


def test_the_second_poison_is_uploaded_for_the_confirming_run(lib):
    spec = _spec("emu-skip-last", "rmsnorm", _one("skip_last", NORM), dts=(BF16,))
    xs = _inputs(spec, BF16)
    op = harness.get_op(spec.op)
    p0, p1 = (harness._signed(p, 2) for p in harness._POISON["bfloat16"])
    for which, p in ((0, p0), (1, p1)):
        once = harness._run_once(rc.run_cuda, spec, op, xs, BF16, spec.op_params(), "cuda", which)
        assert once.outputs["y"].view(np.int16)[-1, -1] == p


def test_an_in_out_tensor_is_one_buffer_read_and_updated(lib):
    spec = _spec("emu-fused", "fused_add_rmsnorm", _one("fused_add", ("x", "residual", "w", "y", "M", "N", "eps")))
    for dt in spec.dtypes:
        xs = _inputs(spec, dt)
        out = _run(spec, dt, xs)
        h = (xs["x"].astype(np.float32) + xs["residual"].astype(np.float32)).astype(xs["x"].dtype)
        assert out.outputs["residual"].tobytes() == h.tobytes() and not out.unwritten and not out.guard_hits
    x_ptr, res_ptr = lib.launched[-1].values()[:2]
    starts = [at for at, _ in lib.alloc_log[-4:]]  # the last run's x, w and two guarded buffers: no separate input
    assert len(lib.alloc_log) == 4 * len(spec.dtypes) and x_ptr - GUARD_BYTES in starts \
        and res_ptr - GUARD_BYTES in starts


def test_int64_labels_and_an_int64_scalar(lib):
    spec = _spec("emu-ce", "cross_entropy", lambda M, N, dt, p: [Launch(
        entry=f"cross_entropy_{dt.tag}", grid=(M,), block=(32,),
        args=("x", "labels", "loss", "M", "N", Scalar("int64", p["ignore_index"])))], dts=(F32, dtypes("bf16", "f32")))
    for dt in spec.dtypes:
        xs = _inputs(spec, dt, M=16)
        assert xs["labels"].dtype == np.int64
        out = _run(spec, dt, xs)
        ign = xs["labels"] == -100
        assert ign.any() and not out.unwritten and np.all(out.outputs["loss"][ign] == 0)
        rows = np.nonzero(~ign)[0]
        want = -xs["x"].astype(np.float32)[rows, xs["labels"][rows]]
        assert np.array_equal(out.outputs["loss"][rows], want)
        assert lib.launched[-1].types()[1:] == [c_uint64, c_uint64, c_int32, c_int32, c_int64]
        assert lib.launched[-1].values()[-1] == -100


# --- refusals, spec errors, faults ------------------------------------------------------------------------------
def test_a_refusal_comes_before_any_driver_call(lib):
    spec = _spec("emu-refuse", "rmsnorm", _one("scale", NORM), dts=(F32,),
                 supports=lambda M, N, dt: "N must be a multiple of 64" if N % 64 else None)
    arrays = {n: rc.DeviceArray(SimpleNamespace(ptr=0x10000 * (i + 1)), (5, 24)) for i, n in enumerate(("x", "w", "y"))}
    with pytest.raises(Unsupported, match="multiple of 64"):
        rc.prepare(spec, {"x": arrays["x"], "w": arrays["w"]}, {"y": arrays["y"]}, spec.op_params(), F32)
    assert lib.calls == []  # no context, no module, no allocation
    with pytest.raises(Unsupported, match="multiple of 64"):
        _run(spec, F32, _inputs(spec, F32))
    assert "cuModuleLoad" not in lib.calls and "cuLaunchKernel" not in lib.calls and not lib.allocs


def test_spec_errors_name_the_entry_or_argument_and_launch_nothing(lib):
    cases = [(_spec("emu-missing", "rmsnorm", _one("no_such_entry", NORM), dts=(F32,)), "not found in emulated.cu"),
             (_spec("emu-bad-arg", "rmsnorm", _one("scale", ("x", "w", "q", "M", "N")), dts=(F32,)), "has argument 'q'"),
             (_spec("emu-bad-tmp", "rmsnorm", _one("scale", ("x", "w", "tmp:t:import os:float32", "M", "N")),
                    dts=(F32,)), "malformed")]
    for spec, match in cases:
        with pytest.raises(SpecError, match=match) as e:
            _run(spec, F32, _inputs(spec, F32))
        assert e.value.fix
    missing = cases[0][0]
    with pytest.raises(SpecError) as e:
        _run(missing, F32, _inputs(missing, F32))
    assert "entry 'no_such_entry_f32'" in str(e.value) and "CUDA_ERROR_NOT_FOUND" in str(e.value)
    assert 'extern "C" name' in e.value.fix and "template arguments" in e.value.fix  # not "must be extern C"
    assert "must be" not in e.value.fix
    assert lib.launched == [] and not lib.allocs


def test_a_fault_is_a_cuda_kernel_fault_naming_the_launch(lib):
    spec = _spec("emu-fault", "rmsnorm", _one("fault", NORM), dts=(F32,))
    with pytest.raises(KernelFault) as e:
        _run(spec, F32, _inputs(spec, F32))
    assert e.value.cuda and is_cuda_fault(e.value.original)
    assert str(e.value) == f"RuntimeError: CUDA error after launch fault_f32 grid=(5,) block=(32,): {ILLEGAL_TEXT}"
    assert not lib.allocs  # every buffer freed after the fault


def test_a_launch_refused_by_the_driver_is_the_same_fault(lib):
    spec = _spec("emu-refused", "rmsnorm", _one("scale", NORM), dts=(F32,))
    lib.refuse["scale_f32"] = OUT_OF_RESOURCES  # cuLaunchKernel itself fails: nothing ran
    with pytest.raises(KernelFault) as e:
        _run(spec, F32, _inputs(spec, F32))
    assert e.value.cuda and str(e.value) == ("RuntimeError: CUDA error after launch scale_f32 grid=(5,) block=(32,): "
                                             "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: too many resources requested for launch")
    assert lib.launched == [] and lib.synced == [] and not lib.allocs


def test_an_unsynchronized_launch_leaves_the_fault_to_the_next_synchronize(lib):
    spec = _spec("emu-fault", "rmsnorm", _one("fault", NORM), dts=(F32,))
    bufs = [cd.DeviceBuffer(5 * 24 * 4) for _ in range(3)]
    x, w, y = (rc.DeviceArray(b, (5, 24)) for b in bufs)
    prepared = rc.prepare(spec, {"x": x, "w": w}, {"y": y}, spec.op_params(), F32)
    rc.launch(prepared, sync=False)  # what benchmarks do
    assert lib.synced == [] and lib.launched[-1].entry == "fault_f32"
    with pytest.raises(cd.DriverError, match="ILLEGAL_ADDRESS"):
        cd.stream_synchronize(prepared.stream)
    prepared.close()
    for b in bufs:
        b.close()


# --- one body for CUDA specs, whatever the runner and process ------------------------------------------------------
def test_every_cuda_spec_gets_device_arrays_even_through_a_wrapped_runner(lib):
    seen = {}

    def wrapped(spec, inputs, outputs, params, dt, device):  # a runner wrapping the standard one (a plugin's, say)
        seen.update({n: type(t).__name__ for n, t in {**inputs, **outputs}.items()})
        rc.run_cuda(spec, inputs, outputs, params, dt, device)

    spec = _spec("emu-scale", "rmsnorm", _one("scale", NORM), dts=(F32,))
    out = execute(wrapped, spec, _inputs(spec, F32), F32, spec.op_params(), "cuda")
    assert seen == {"x": "DeviceArray", "w": "DeviceArray", "y": "DeviceArray"}
    assert not out.unwritten and not out.guard_hits


def test_a_cuda_spec_off_the_gpu_is_tool_missing_before_any_driver_call(lib):
    spec = _spec("emu-scale", "rmsnorm", _one("scale", NORM), dts=(F32,))
    with pytest.raises(ToolMissing, match="needs a CUDA GPU; device is cpu"):
        execute(rc.run_cuda, spec, _inputs(spec, F32), F32, spec.op_params(), "cpu")
    assert lib.calls == []


# --- the retired switch ----------------------------------------------------------------------------------------------
def test_the_retired_switch_is_one_warning_line_and_changes_nothing(tmp_path):
    import io

    from verifier.launch import warn_retired_env

    err = io.StringIO()
    assert not warn_retired_env({}, err) and err.getvalue() == ""
    assert warn_retired_env({"VERIFIER_CUDA_LAUNCH": "torch"}, err)
    assert err.getvalue().count("\n") == 1 and "VERIFIER_CUDA_LAUNCH='torch' no longer has an effect" in err.getvalue()
    cmd = [sys.executable, "-m", "verifier.cli", "list", "kernels/cuda/rmsnorm_spec.py"]
    env = {k: v for k, v in os.environ.items() if k != "VERIFIER_CUDA_LAUNCH"}
    plain = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    for value in ("torch", "driver", "bogus"):
        got = subprocess.run(cmd, cwd=ROOT, env={**env, "VERIFIER_CUDA_LAUNCH": value}, capture_output=True,
                             text=True, timeout=120)
        assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout) == (0, plain.stdout)
        warned = [ln for ln in got.stderr.splitlines() if "VERIFIER_CUDA_LAUNCH" in ln]
        assert len(warned) == 1 and got.stderr.replace(warned[0] + "\n", "") == plain.stderr, got.stderr


def test_a_pytest_session_warns_once_about_the_retired_switch(tmp_path):
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *NO_HYPOTHESIS_PLUGIN,
           "-p", "verifier.pytest_plugin", "test_nothing.py"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}  # a session, not a worker
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    for value, lines in ((None, 0), ("torch", 1)):
        env.pop("VERIFIER_CUDA_LAUNCH", None)
        if value:
            env["VERIFIER_CUDA_LAUNCH"] = value
        out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0 and "1 passed" in out.stdout, out.stdout + out.stderr
        assert (out.stdout + out.stderr).count("no longer has an effect") == lines, out.stderr


# --- the check child of a CUDA spec: no torch, CuPy, Hypothesis or Triton ------------------------------------------
_DRY = r"""
import sys
sys.path.insert(0, "tests")
import numpy as np
from verifier.isolation import child as isolate_child  # the check child's imports
from verifier.battery import check_kernel
from verifier.results.options import Options
from verifier.declare.registry import load_spec_file
specs = load_spec_file("kernels/cuda/softmax_fast_spec.py") + load_spec_file("kernels/cuda/rmsnorm_spec.py")
for k in specs:  # supports() of every kernel, the cluster kernel's capability probe included
    k.check_supported(64, 4096, k.dtypes[0])
rms = [k for k in load_spec_file("kernels/cuda/rmsnorm_spec.py") if k.name == "cuda-rmsnorm-n3"][0]
check_kernel(rms, Options(level="quick", device="cpu"))  # build, resources, static: the CPU half of a check
import fake_libcuda, test_launch_path as t  # the fake driver: the launch path on host memory, no GPU
fake_libcuda.install(t.KERNELS)
from verifier.launch.harness import execute
from verifier.launch.cuda import run_cuda
spec = t._spec("emu-scale", "rmsnorm", t._one("scale", t.NORM))
out = execute(run_cuda, spec, t._inputs(spec, t.BF16), t.BF16, spec.op_params(), "cuda")
assert not out.unwritten and not out.guard_hits
print(sorted(m for m in ("torch", "cupy", "hypothesis", "triton") if m in sys.modules))
"""


def test_the_check_child_imports_no_torch_cupy_hypothesis_or_triton_for_a_cuda_spec():
    """The CPU-side part of a quick check child of a CUDA kernel (its imports, spec loading, build, static, and
    the harness's device body on a faked driver) leaves torch, CuPy, Hypothesis and Triton unimported."""
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc for the build step of the check")
    out = subprocess.run([sys.executable, "-c", _DRY], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


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

"""Forked children on a GPU (verifier.isolation.forked with device cuda), on any machine: the battery is replaced by
stand-ins (a fork runs the parent's code, so a monkeypatched check_kernel is what the child runs). A hung kernel
is a timeout finding and its whole process group dies; a CUDA fault is a crash finding quoting the error and the
child's last output; a child is pinned to its lane's GPU; forks are used only while this process has not
initialised the CUDA driver (a fork of one that has cannot use CUDA), and --isolate still spawns."""
import os
import subprocess
import time

import pytest

from verifier.declare.registry import load_spec_file
from verifier.gpu import probe
from verifier.isolation import _how, forked, parallel
from verifier.results.kernel import KernelReport
from verifier.results.options import Options

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork does not exist on this platform")

SPEC = """
from verifier.spec import CallableKernel, dtypes
def k(inputs, outputs, params, dt):
    pass
KERNELS = [CallableKernel(name=n, op="softmax", fn=k, dtypes=[dtypes("f32")]) for n in ("k", "j")]
"""


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    p = tmp_path_factory.mktemp("gpufork") / "gpufork_spec.py"
    p.write_text(SPEC)
    return {s.name: s for s in load_spec_file(p)}


def _opts(timeout=60.0):
    return Options(level="quick", device="cuda", timeout=timeout)


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] in ("Z", "X")  # a zombie waits for init, but is dead
    except FileNotFoundError:
        return True


def test_a_hung_kernel_is_a_timeout_and_its_process_group_dies(specs, monkeypatch, tmp_path):
    pidfile = tmp_path / "grandchild"

    def hang(spec, opts, progress=None, report=None):
        progress("k [f32]: normal_small")
        p = subprocess.Popen(["sleep", "60"])  # what a battery starts (nvcc, ptxas) must die with it
        pidfile.write_text(str(p.pid))
        time.sleep(60)

    monkeypatch.setattr(forked, "check_kernel", hang)
    t0 = time.monotonic()
    r = forked.check_forked(specs["k"], _opts(timeout=1.5))
    assert time.monotonic() - t0 < 20
    (f,) = r.findings
    assert f.check == "timeout" and "did not finish within 1.5 s" in f.message
    assert (f.dtype, f.input) == ("f32", "normal_small")  # the step it hung in
    deadline = time.monotonic() + 5
    while not _gone(int(pidfile.read_text())) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(int(pidfile.read_text()))


def test_a_cuda_fault_is_a_crash_quoting_the_error_and_the_last_output(specs, monkeypatch):
    def fault(spec, opts, progress=None, report=None):
        progress("k [f32]: normal_small")
        print("printf from the kernel's host code", flush=True)
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(forked, "check_kernel", fault)
    r = forked.check_forked(specs["k"], _opts())
    (f,) = r.findings
    assert f.check == "crash" and "an illegal memory access was encountered" in f.message
    assert "printf from the kernel's host code" in f.message and (f.dtype, f.input) == ("f32", "normal_small")
    assert not r.internal_error  # the kernel's fault, not a bug in kernel-verifier


def test_a_child_is_pinned_to_its_lane_gpu_and_answers(specs, monkeypatch):
    def answer(spec, opts, progress=None, report=None):
        r = KernelReport(spec=spec, device=opts.device)
        r.notes.append("visible=" + os.environ.get("CUDA_VISIBLE_DEVICES", "-"))
        return r

    monkeypatch.setattr(forked, "check_kernel", answer)
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    plan = [(0, specs["k"], parallel.FORK), (1, specs["j"], parallel.FORK)]
    reports = parallel.run_parallel(plan, _opts(), 2, devices=["0", "1"])
    assert sorted(str(n) for r in reports.values() for n in r.notes) == ["visible=0", "visible=1"]
    assert os.environ.get("CUDA_VISIBLE_DEVICES") == before  # set in the children only


def test_at_several_jobs_a_hung_fork_times_out_and_the_other_reports(specs, monkeypatch):
    def one_hangs(spec, opts, progress=None, report=None):
        if spec.name == "k":
            time.sleep(60)
        return KernelReport(spec=spec, device=opts.device)

    monkeypatch.setattr(forked, "check_kernel", one_hangs)
    plan = [(0, specs["k"], parallel.FORK), (1, specs["j"], parallel.FORK)]
    reports = parallel.run_parallel(plan, _opts(timeout=1.0), 2)
    assert [f.check for f in reports[0].findings] == ["timeout"] and not reports[1].findings


def test_forks_only_while_the_driver_is_not_initialised_here(specs, monkeypatch):
    k = specs["k"]
    monkeypatch.setattr(probe, "driver_initialized", lambda: False)
    assert _how(k, _opts(), None) == parallel.FORK
    assert _how(k, _opts(), True) == parallel.CHILD  # --isolate: a fresh process
    monkeypatch.setattr(probe, "driver_initialized", lambda: True)  # a fork could not use CUDA
    assert _how(k, _opts(), None) == parallel.CHILD


_FORKED = """
import json, sys
import verifier.isolation as iso
from verifier.isolation import parallel
from verifier.declare.registry import load_spec_file
from verifier.results.options import Options

def spawned(*args, **kwargs):
    raise AssertionError("a fresh child was spawned where a fork was expected")

iso.check_in_child = parallel.check_in_child = spawned
specs = load_spec_file(sys.argv[1]) + [k for k in load_spec_file("kernels/cuda/rmsnorm_spec.py")
                                       if k.name == "cuda-rmsnorm-n3"]
reports = iso.check_all(specs, Options(level="quick", device="cuda"), jobs=int(sys.argv[2]))
print(json.dumps({r.spec.name: [r.error, sorted({f.check for f in r.findings}),
                                [f.message for f in r.findings if f.check == "crash"]] for r in reports}))
"""


def _gpu_reason():
    import shutil

    if probe.fork_safe_device_count() == 0:  # asked of another process: this one stays fit to fork
        return "needs an NVIDIA GPU and its driver (libcuda sees no device)"
    if shutil.which("nvcc") is None:
        return "needs nvcc to build the CUDA kernels"
    return None


_GPU_REASON = _gpu_reason()


@pytest.mark.skipif(_GPU_REASON is not None, reason=_GPU_REASON or "")  # known at collection: not generated here
@pytest.mark.parametrize("jobs", [1, 3])
def test_on_a_gpu_forks_find_the_crash_and_the_guard_defects(jobs):
    import json
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", _FORKED, str(root / "tests/data/gpu/guard_defects_spec.py"), str(jobs)],
                         cwd=root, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(error is None for error, _, _ in got.values()), got
    assert "crash" in got["gpu-rmsnorm-illegal"][1]
    assert any("CUDA_ERROR_ILLEGAL_ADDRESS" in m for m in got["gpu-rmsnorm-illegal"][2]), got["gpu-rmsnorm-illegal"]
    assert "out-of-range-write" in got["gpu-rmsnorm-overrun"][1] and "unwritten" in got["gpu-rmsnorm-skip-last"][1]
    assert got["cuda-rmsnorm-n3"] == [None, [], []]  # the crash next to it cost it nothing


TRITON_SPEC = """
from verifier.spec import TritonKernel, dtypes
KERNELS = [TritonKernel(name="t", op="softmax", module="tri.py", launcher="launch",
                        dtypes=[dtypes("f32"), dtypes("f16"), dtypes("bf16")])]
"""


def test_a_triton_kernel_alone_gets_compile_helpers_that_die_with_its_check(monkeypatch, tmp_path):
    from verifier.gpu import pinning

    p = tmp_path / "tri_spec.py"
    p.write_text(TRITON_SPEC)
    (spec,) = load_spec_file(p)
    seen = tmp_path / "seen"
    seen.mkdir()

    def battery(spec, opts, progress=None, report=None):
        (seen / f"{opts.dtype or 'all'}-{os.getpid()}").write_text("")
        if opts.dtype is not None:  # a helper: compiles for as long as it is let
            time.sleep(60)
        return KernelReport(spec=spec, device=opts.device)

    monkeypatch.setattr(forked, "check_kernel", battery)
    monkeypatch.setattr(pinning, "usable_cpus", lambda: 16)
    r = forked.check_forked(spec, _opts(), alone=True)
    assert not r.findings and r.error is None  # the check's own report, whatever the helpers do
    deadline = time.monotonic() + 5
    while len(list(seen.iterdir())) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    names = sorted(f.name.split("-")[0] for f in seen.iterdir())
    assert names == ["all", "bf16", "f16"]  # one helper per dtype after the first
    for f in seen.iterdir():
        pid = int(f.name.split("-")[1])
        deadline = time.monotonic() + 5
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(pid)
    monkeypatch.setattr(pinning, "usable_cpus", lambda: 2)  # no CPUs to spare: no helper
    assert forked._compile_helpers(spec, _opts(), None) == []
    assert forked._compile_helpers(spec, Options(level="quick", device="cpu"), None) == []


def test_the_longest_expected_check_starts_first_and_durations_are_kept(specs, monkeypatch, tmp_path):
    from verifier.isolation import durations

    monkeypatch.setenv("VERIFIER_CACHE_DIR", str(tmp_path))
    started = []
    real = forked.start_forked
    monkeypatch.setattr(forked, "start_forked", lambda spec, opts, env=None: started.append(spec.name)
                        or real(spec, opts, env=env))
    monkeypatch.setattr(forked, "check_kernel",
                        lambda spec, opts, progress=None, report=None: KernelReport(spec=spec, device="cuda"))
    plan = [(0, specs["k"], parallel.FORK), (1, specs["j"], parallel.FORK)]
    assert durations.expected([specs["k"], specs["j"]], _opts()) == [8.0, 8.0]  # no record: the kind's guess
    reports = parallel.run_parallel(plan, _opts(), 1, expected={0: 1.0, 1: 5.0})
    assert started == ["j", "k"] and set(reports) == {0, 1}  # longest first; reports keyed by spec index
    durations.record([(specs["k"], 2.5), (specs["j"], 0.0)], _opts())
    assert durations.expected([specs["k"], specs["j"]], _opts()) == [2.5, 8.0]  # no time measured: not kept
    assert durations.expected([specs["k"]], Options(level="ci", device="cuda")) == [8.0]  # per level

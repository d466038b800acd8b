"""The pytest plugin and the suites: options, ids, user kernels joining, failure reports, skips, junit
properties, the poisoned-context fallback; and GPU pinning with faked device counts.

The suite runs are subprocesses of the real softmax suite (suites/test_ops.py -k test_softmax, unedited) with a user spec file
given through --verifier-specs, narrowed by --verifier-kernels and -k so that each run takes seconds.
"""
import importlib.util
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from child_sessions import NO_HYPOTHESIS_PLUGIN

# Imported before pytester's sys.modules snapshots: inline runs then see the same verifier.spec classes
# every run, and torch (which cannot be imported twice in a process) is never dropped and re-imported.
import torch  # noqa: F401
import verifier.battery  # noqa: F401
from verifier.inputs.cases import cases_for
import verifier.declare.registry  # noqa: F401
from verifier.gpu import pinning as gp
from verifier.gpu.probe import physical_gpu_count
from verifier.launch.triton import activate

# triton too (in the mode this process would pick anyway): an inline run that imported it first would drop it from
# sys.modules at its end, and the next import in this process aborts in nanobind ("refusing to add duplicate key").
if importlib.util.find_spec("triton") is not None:
    activate()

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
NO_GPU = "no CUDA GPU: CUDA kernels are built and resource-checked only"

USER_SPEC = '''
import torch
from verifier.spec import CallableKernel, dtypes

def crash(inputs, outputs, params, dt):
    raise RuntimeError("CUDA error: an illegal memory access was encountered")

def too_big(inputs, outputs, params, dt):          # every probability 5% too large
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1) * 1.05)

def good(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))

KERNELS = [
    CallableKernel(name="user-crash", op="softmax", fn=crash, dtypes=[dtypes("f32")], device="cpu"),
    CallableKernel(name="user-big5", op="softmax", fn=too_big, dtypes=[dtypes("bf16")]),
    CallableKernel(name="user-good", op="softmax", fn=good, dtypes=[dtypes("f32")]),
]
'''


def _pytest(*args, cwd=REPO, timeout=240):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VERIFIER_", "PYTEST_XDIST"))}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:randomly",
                           *NO_HYPOTHESIS_PLUGIN, *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _cases(junit: Path) -> dict:
    out = {}
    for tc in ET.parse(junit).getroot().iter("testcase"):
        kind = next((k for k in ("failure", "error", "skipped") if tc.find(k) is not None), "passed")
        el = tc.find(kind)
        props = {}
        for p in tc.iter("property"):
            props.setdefault(p.get("name"), []).append(p.get("value"))
        out[tc.get("name")] = (kind, (el.get("message", "") + "\n" + (el.text or "")) if el is not None else "", props)
    return out


# --- option validation -------------------------------------------------------------------------
@pytest.mark.parametrize("args, needle", [
    (["--verifier-budget", "huge"], "--verifier-budget 'huge' is not a run level\n  fix: use one of quick, ci, thorough"),
    (["--verifier-level", "huge"], "--verifier-level 'huge' is not a run level"),
    (["--verifier-device", "tpu"], "--verifier-device 'tpu': choose one of cpu, cuda, auto"),
    (["--verifier-seed", "x1"], "--verifier-seed 'x1' is not an integer"),
    (["--verifier-sanitize-tool", "leakcheck"], "choose one of racecheck, memcheck, synccheck, initcheck"),
    (["--verifier-specs", "no/such/spec.py"], "--verifier-specs no/such/spec.py: no such file or directory"),
])
def test_bad_option_is_a_usage_error_naming_the_choices(args, needle, pytester, capsys):
    # in this process (pytester), as pytest's own main runs it: a subprocess each would only add its start-up
    r = pytester.inline_run("--co", "-q", str(REPO / "tests" / "test_ulp.py"), f"--rootdir={REPO}", "-p", "no:xdist",
                            *args)
    err = capsys.readouterr().err
    assert r.ret == pytest.ExitCode.USAGE_ERROR, err
    assert needle in err
    assert "Traceback" not in err


def test_kernel_glob_matching_nothing_is_a_usage_error(pytester, capsys):
    r = pytester.inline_run("--co", str(REPO / "suites" / "test_ops.py"), f"--rootdir={REPO}", "-p", "no:xdist",
                            "--verifier-kernels", "no-such-kernel*")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    err = capsys.readouterr().err
    assert "--verifier-kernels no-such-kernel* matches no registered kernel" in err and "Traceback" not in err


# --- ids, user kernels, failures, skips, junit ------------------------------------------------------
def _collected(pytester, *args) -> tuple:
    """(ids, device the session resolved) of the real softmax suite, collected in this process (pytester) to stay
    fast."""
    if "--verifier-kernels" not in args:
        args += ("--verifier-kernels", "torch-softmax,cuda-softmax-s3")
    r = pytester.inline_run("--co", str(REPO / "suites" / "test_ops.py"), f"--rootdir={REPO}", "-p", "no:xdist",
                            "-k", "test_softmax", *args)
    (finish,) = r.getcalls("pytest_collection_finish")  # the items after the plugin dropped empty suites
    assert r.ret == 0 and finish.session.items
    return [i.nodeid.split("::", 1)[1] for i in finish.session.items], finish.session.config._verifier["resolved"]


def _ids(pytester, *args):
    return _collected(pytester, *args)[0]


def test_ids_are_readable_and_stable(pytester):
    ids, device = _collected(pytester)
    for want in ("test_softmax[torch-softmax-f32-d7_below_warp]", "test_softmax[torch-softmax-bf16-fully_masked_rows]",
                 "test_softmax_shapes[torch-softmax-f16]", "test_softmax_refusal[torch-softmax-bf16]",
                 "test_softmax_determinism[torch-softmax-f32]", "test_softmax_build[cuda-softmax-s3]",
                 "test_softmax_static[cuda-softmax-s3]"):
        assert want in ids
    # a CUDA kernel's launches are generated only where a GPU is (test_suite_params_on_a_gpu below)
    launched = {i.split("[")[0] for i in ids if i.startswith(("test_softmax[cuda-", "test_softmax_refusal[cuda-"))}
    assert launched == ({"test_softmax", "test_softmax_refusal"} if device == "cuda" else set()), (device, launched)
    # the boundary case (longest supported probe row) is one of the cases
    assert any(i.startswith("test_softmax[torch-softmax-f32-boundary_n") for i in ids)
    assert len(ids) == len(set(ids))
    assert _ids(pytester, "--verifier-seed", "7") == ids  # seed changes the draws, not the ids
    quick = _ids(pytester, "--verifier-budget", "quick")
    assert set(quick) < set(ids)  # the budget picks how many cases, not how they are named


@pytest.fixture(scope="module")
def user_run(tmp_path_factory):
    """One run of the unedited softmax suite: user kernels joined with --verifier-specs, one bundled CUDA kernel,
    --verifier-sanitize, junit output."""
    d = tmp_path_factory.mktemp("user")
    (d / "user_spec.py").write_text(textwrap.dedent(USER_SPEC))
    junit = d / "junit.xml"
    r = _pytest("suites/test_ops.py", "--verifier-specs", str(d / "user_spec.py"),
                "--verifier-kernels", "user-big5,user-good,cuda-softmax-s1", "--verifier-sanitize",
                "--verifier-device", "cpu", "-k", "test_softmax and (normal_small or build or determinism)", f"--junitxml={junit}",
                "--basetemp", str(d / "base"))
    return r, _cases(junit), d


@pytest.fixture(scope="module")
def crash_run(tmp_path_factory):
    """`-n 2` with a kernel that raises a CUDA fault and three good tests: its worker runs its later test in a child
    process (which passes); the other worker never faulted and runs its tests in-process. One run for both tests
    below (each worker and child is a pytest process: seconds each)."""
    d = tmp_path_factory.mktemp("crash")
    (d / "user_spec.py").write_text(textwrap.dedent(USER_SPEC))
    junit = d / "junit.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VERIFIER_", "PYTEST_XDIST"))}
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", *NO_HYPOTHESIS_PLUGIN, "-n", "2",
                        "suites/test_ops.py",
                        "--verifier-specs", str(d / "user_spec.py"), "--verifier-kernels", "user-crash,user-good",
                        "--verifier-device", "cpu", "-k",
                        # the crash and three good tests (d31, d32, d33): xdist's first batch gives each worker two
                        # consecutive ones, so the faulted worker runs the test after the crash in a child (a pytest
                        # process: seconds) and the other worker runs two in-process
                        "test_softmax and (user-crash-f32-normal_small or user-good-f32-d3)",
                        f"--junitxml={junit}"], cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    return r, _cases(junit)


def test_user_kernels_join_without_suite_edits(user_run):
    r, cases, _ = user_run
    assert cases["test_softmax[user-good-f32-normal_small]"][0] == "passed", r.stdout
    assert cases["test_softmax_determinism[user-good-f32]"][0] == "passed", r.stdout
    assert cases["test_softmax[user-big5-bf16-normal_small]"][0] == "failure"


def test_failing_user_kernel_shows_the_ulp_report_and_repro(user_run):
    r, cases, d = user_run
    kind, text, props = cases["test_softmax[user-big5-bf16-normal_small]"]
    assert kind == "failure"
    assert "- [value] user-big5, bf16, normal_small, shape" in text
    assert "elements" in text and "over their ULP budget; worst at" in text and "ULP vs allowed" in text
    assert (f"repro: verifier check {d / 'user_spec.py'} --kernel user-big5 --dtype bf16 --case normal_small "
            "--level ci --seed 0 --device cpu") in text
    assert ("pytest repro: pytest 'suites/test_ops.py::test_softmax[user-big5-bf16-normal_small]' --verifier-level "
            f"ci --verifier-seed 0 --verifier-device cpu --verifier-specs {d / 'user_spec.py'}") in text
    # junit: the failing check classes, worst first, are the 'check' property; the repro is recorded
    assert props["check"] == ["value,invariant"]
    assert props["repro"][0].startswith("verifier check ")
    assert cases["test_softmax[user-good-f32-normal_small]"][2]["check"] == ["value"]


def test_cuda_launch_tests_are_not_generated_on_cpu_but_counted_and_still_build(user_run):
    r, cases, _ = user_run
    assert not any(n.startswith(("test_softmax[cuda-", "test_softmax_determinism[cuda-")) for n in cases)
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("kernel-verifier: ")]
    assert "tests not generated on this machine, where they could only skip" in line and NO_GPU in line
    kind, _, props = cases["test_softmax_build[cuda-softmax-s1]"]
    if kind == "skipped":
        pytest.skip("nvcc is not installed here")
    assert kind == "passed"
    assert any("[sm_80]" in n for n in props["note"]) and any("[sm_90]" in n for n in props["note"])


def test_sanitizer_reruns_are_not_generated_on_cpu_but_counted(user_run):
    r, cases, _ = user_run
    assert not any(n.endswith("-memcheck]") for n in cases)  # callables are not sanitized; no GPU for the rest
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("kernel-verifier: ")]
    assert "no CUDA GPU: compute-sanitizer re-runs need one" in line


def test_the_count_line_is_what_collection_left_out(pytester, monkeypatch):
    # The counter is the module's: a test that runs a session in its process (pytester) or asks for suite
    # parameters adds to it while it runs, and an earlier session there left its own counts. Counted after the
    # tests, the line (an xdist worker's, the first to end) changed from run to run: 2761 or 3366 on one commit.
    from collections import Counter

    from verifier.plugin import session

    monkeypatch.setattr(session, "NOT_GENERATED", Counter({"left by an earlier session here": 3}))
    pytester.makeconftest("""
        from verifier.plugin import session
        def pytest_collection_modifyitems(items):
            session.NOT_GENERATED["left out at collection"] += 2
    """)
    pytester.makepyfile(test_counts="""
        def test_counts_while_it_runs():
            from verifier.plugin import session
            session.NOT_GENERATED["counted while a test ran"] += 5
    """)
    r = pytester.runpytest_inprocess("-p", "no:xdist", "-p", "no:cacheprovider")
    r.assert_outcomes(passed=1)
    assert [ln for ln in r.outlines if ln.startswith("kernel-verifier: ")] == [
        "kernel-verifier: 2 tests not generated on this machine, where they could only skip: 2 left out at collection"]


def test_suite_params_on_a_gpu_generate_every_launch_and_rerun():
    from types import SimpleNamespace

    from verifier.declare.registry import load_spec_file
    from verifier.plugin import session

    kernels = [k for k in load_spec_file(REPO / "kernels" / "cuda" / "softmax_spec.py") if k.name == "cuda-softmax-s3"]
    v = {"device": "auto", "resolved": "cuda", "level": "ci", "seed": 0, "kernels": kernels, "sanitize": True,
         "tools": ["memcheck"], "globs": [], "specs": []}
    config = SimpleNamespace(_verifier=v)
    refused = "a case the kernel's supports() refuses (verifier check notes it)"
    before = dict(session.NOT_GENERATED)
    ids = [p.id for p in session.suite_params(config, "softmax", session.PARAMS, "values")]
    first = {k: n - before.get(k, 0) for k, n in session.NOT_GENERATED.items()}
    n_refused = first.get(refused, 0)  # refused cases are never generated
    # nor the large cases (issue #36, at ci too), which this machine's device 0 says nothing about
    n_device = sum(n for k, n in first.items() if k.startswith("a case not checked here"))
    before = dict(session.NOT_GENERATED)
    assert "cuda-softmax-s3-f32-d7_below_warp" in ids and "cuda-softmax-s3-f32-d7_below_warp-memcheck" in ids
    assert [p.id for p in session.suite_params(config, "softmax", session.PARAMS[:2], "refusal")][0] == \
        "cuda-softmax-s3-f32"
    v["resolved"] = "cpu"  # the same kernel without a GPU: nothing but the count
    assert session.suite_params(config, "softmax", session.PARAMS, "values") == []
    gained = {k: n - before.get(k, 0) for k, n in session.NOT_GENERATED.items() if n != before.get(k, 0)}
    assert gained[NO_GPU] == len(ids) // 2 + n_refused + n_device  # every case: supports() is not asked without a GPU
    assert gained["no CUDA GPU: compute-sanitizer re-runs need one"] == gained[NO_GPU]


def test_cuda_fault_moves_later_tests_to_a_child_process(crash_run):
    r, cases = crash_run
    kind, text, props = cases["test_softmax[user-crash-f32-normal_small]"]
    assert kind == "failure" and "- [crash] user-crash" in text and "illegal memory access" in text, r.stdout
    assert props["check"] == ["crash"] and "isolated" not in props
    # the tests after it in the same process (its xdist worker) ran in child processes, where they passed
    (faulted,) = props["worker"]
    later = [c for n, c in cases.items() if c[2].get("worker") == [faulted] and "user-good" in n and c[0] != "skipped"]
    assert later, r.stdout
    for kind, _, props in later:
        assert kind == "passed", r.stdout
        assert props["isolated"][0].startswith("child process (this worker's CUDA context is unusable after:")
        assert props["check"] == ["value"]  # the child's properties come back


def test_a_fault_in_one_xdist_worker_leaves_the_other_untouched(crash_run):
    """`-n 2` with one faulting test: its worker re-runs its later tests in child processes (which pass);
    the other worker never faulted and runs its tests in-process."""
    r, cases = crash_run
    cases = dict(cases)
    kind, text, props = cases.pop("test_softmax[user-crash-f32-normal_small]")
    assert kind == "failure" and "- [crash] user-crash" in text and "isolated" not in props, r.stdout
    (faulted,) = props["worker"]
    assert len(cases) == 3 and all(k == "passed" for k, _, _ in cases.values()), r.stdout
    other = [p for _, _, p in cases.values() if p["worker"] != [faulted]]
    assert other and not any("isolated" in p for p in other)  # the other worker: in-process throughout
    mine = [p for _, _, p in cases.values() if p["worker"] == [faulted]]
    assert all(p["check"] for p in mine)  # the faulted worker's later tests: results came back from children
    assert mine and all("isolated" in p for p in mine)  # it ran later tests (xdist sends it a chunk), each in a child


# --- GPU pinning (faked device counts) ----------------------------------------------------------------
def test_round_robin_two_gpus_three_workers():
    pins = [gp.pinned_environment({"PYTEST_XDIST_WORKER": f"gw{i}"}, physical_count=2) for i in range(3)]
    assert pins == [{"CUDA_VISIBLE_DEVICES": "0"}, {"CUDA_VISIBLE_DEVICES": "1"}, {"CUDA_VISIBLE_DEVICES": "0"}]


def test_pinning_maps_within_an_existing_restriction():
    env = {"CUDA_VISIBLE_DEVICES": "2,3", "PYTEST_XDIST_WORKER": "gw0"}
    assert [gp.pinned_environment({**env, "PYTEST_XDIST_WORKER": f"gw{i}"}, 8)["CUDA_VISIBLE_DEVICES"]
            for i in range(3)] == ["2", "3", "2"]
    uuids = {"CUDA_VISIBLE_DEVICES": "GPU-aaaa, GPU-bbbb", "PYTEST_XDIST_WORKER": "gw1"}
    assert gp.pinned_environment(uuids, 2) == {"CUDA_VISIBLE_DEVICES": "GPU-bbbb"}


@pytest.mark.parametrize("env, count", [
    ({"PYTEST_XDIST_WORKER": "gw0"}, 0),  # no GPU
    ({"PYTEST_XDIST_WORKER": "gw1", "CUDA_VISIBLE_DEVICES": ""}, 4),  # every GPU hidden
    ({}, 2),  # not an xdist worker
    ({"PYTEST_XDIST_WORKER": "master"}, 2),
])
def test_nothing_to_pin(env, count):
    assert gp.pinned_environment(env, count) == {}


def test_visible_devices_follow_cuda_rules():
    assert gp.parse_visible(None) is None
    assert gp.parse_visible("") == []
    assert gp.parse_visible("1,-1,0") == ["1"]  # an invalid entry hides itself and the rest
    assert gp.visible_devices({}, 3) == ["0", "1", "2"]


def test_auto_workers_is_the_visible_gpu_count():
    assert gp.auto_workers({}, 4, cpu_count=4) == 4
    assert gp.auto_workers({"CUDA_VISIBLE_DEVICES": "1,3"}, 4, cpu_count=2) == 2
    assert gp.auto_workers({}, 0) is None  # xdist falls back to the CPU count


def test_gpu_count_from_nvidia_smi_without_cuda():
    class Out:
        returncode = 0
        stdout = ("GPU 0: NVIDIA H200 (UUID: GPU-1)\n  MIG 1g.18gb Device 0: (UUID: MIG-1)\n"
                  "GPU 1: NVIDIA H200 (UUID: GPU-2)\n")

    assert physical_gpu_count(run=lambda *a, **k: Out()) == 2
    Out.returncode = 9
    assert physical_gpu_count(run=lambda *a, **k: Out()) == 0


def test_pinning_refuses_to_pretend_after_cuda_init(monkeypatch):
    class FakeCuda:
        @staticmethod
        def is_initialized():
            return True

    class FakeTorch:
        cuda = FakeCuda

    monkeypatch.setitem(sys.modules, "torch", FakeTorch)
    assert gp.cuda_initialized()
    monkeypatch.delitem(sys.modules, "torch")
    assert not gp.cuda_initialized()


@pytest.fixture
def fake_nvidia_smi(tmp_path, monkeypatch):
    """An nvidia-smi on PATH that lists three GPUs (no driver needed)."""
    exe = tmp_path / "bin" / "nvidia-smi"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\nfor i in 0 1 2; do echo \"GPU $i: NVIDIA H200 (UUID: GPU-$i)\"; done\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    return exe


def test_n_auto_asks_for_one_worker_per_gpu(pytester, fake_nvidia_smi, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # the controller: under xdist this test is in a worker
    monkeypatch.setenv("VERIFIER_WORKERS_PER_GPU", "1")  # the CPUs-over-GPUs default: tests/test_gpu_workers.py
    config = pytester.parseconfigure("-p", "xdist")
    assert config.hook.pytest_xdist_auto_num_workers(config=config) == 3
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    assert config.hook.pytest_xdist_auto_num_workers(config=config) == 1


def test_n_auto_with_a_bad_workers_per_gpu_is_a_usage_error(pytester, fake_nvidia_smi, monkeypatch):
    # The hook caught UsageError without importing it: a bad value gave NameError instead of the message.
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setenv("VERIFIER_WORKERS_PER_GPU", "lots")
    config = pytester.parseconfigure("-p", "xdist")
    with pytest.raises(pytest.UsageError, match="VERIFIER_WORKERS_PER_GPU"):
        config.hook.pytest_xdist_auto_num_workers(config=config)


def test_worker_is_pinned_before_conftest_imports(tmp_path, fake_nvidia_smi):
    (tmp_path / "conftest.py").write_text("import os\nSEEN = os.environ.get('CUDA_VISIBLE_DEVICES')\n")
    (tmp_path / "test_pin.py").write_text("from conftest import SEEN\n\ndef test_pin():\n    assert SEEN == '1', SEEN\n")
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", "test_pin.py"],
                       cwd=tmp_path, env={**env, "PYTEST_XDIST_WORKER": "gw4", "PYTEST_XDIST_WORKER_COUNT": "5"},
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr  # gw4 of 3 GPUs -> GPU 1


def test_entry_point_spec_module_joins_the_suites(pytester, tmp_path, monkeypatch):
    import importlib.metadata

    pkg = tmp_path / "site" / "userpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels_spec.py").write_text(textwrap.dedent(USER_SPEC))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    ep = importlib.metadata.EntryPoint(name="mine", value="userpkg.kernels_spec", group="kernel_verifier.specs")
    real = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda **kw: [ep] if kw.get("group") == "kernel_verifier.specs" else real(**kw))
    ids = _ids(pytester, "--verifier-kernels", "user-good")
    assert "test_softmax[user-good-f32-d7_below_warp]" in ids and "test_softmax_determinism[user-good-f32]" in ids
    assert not any("torch-softmax" in i for i in ids)
    bad = importlib.metadata.EntryPoint(name="typo", value="userpkg.no_such_spec", group="kernel_verifier.specs")
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: [bad])
    from verifier.errors import UsageError
    from verifier.plugin.session import entry_point_spec_files

    with pytest.raises(UsageError, match="entry point typo = 'userpkg.no_such_spec'"):
        entry_point_spec_files()


def test_bundled_kernels_skip_the_defects_directory(tmp_path):
    from verifier.plugin.session import bundled_spec_files

    for rel in ("cuda/softmax_spec.py", "torch/spec.py", "defects/racy_spec.py", "defects/sub/spec.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("KERNELS = []\n")
    found = sorted(p.relative_to(tmp_path).as_posix() for p in bundled_spec_files(tmp_path))
    assert found == ["cuda/softmax_spec.py", "torch/spec.py"]


def test_sanitizer_rerun_command_wraps_a_one_test_pytest(pytester, tmp_path):
    from verifier.plugin.children import rerun_target, sanitizer_command
    from verifier.declare.registry import load
    from verifier.sanitizer.runs import ToolInfo

    node = "suites/test_ops.py::test_softmax[cuda-softmax-s1-f32-d7_below_warp-memcheck]"
    base = rerun_target(node, "memcheck")
    assert base == "suites/test_ops.py::test_softmax[cuda-softmax-s1-f32-d7_below_warp]"
    with pytest.raises(ValueError):
        rerun_target(base, "memcheck")
    spec = next(k for k in load([REPO / "kernels" / "cuda" / "softmax_spec.py"]) if k.name == "cuda-softmax-s1")
    dt = spec.dtypes[0]
    case = next(c for c in cases_for(spec, dt, "ci") if c.name == "d7_below_warp")
    info = ToolInfo(path="/opt/cuda/bin/compute-sanitizer", version="2025.3.1",
                    options=frozenset({"tool", "xml", "save", "print-limit", "error-exitcode", "log-file",
                                       "kernel-name", "padding"}))
    config = pytester.parseconfigure("--verifier-seed", "3", "--verifier-budget", "quick")
    cmd = sanitizer_command(config, info, "memcheck", base, spec, dt, case, tmp_path / "r.xml", tmp_path / "r.log",
                            tmp_path / "j.xml")
    text = " ".join(map(str, cmd))
    assert cmd[:3] == ["/opt/cuda/bin/compute-sanitizer", "--tool", "memcheck"]
    for part in (f"--xml --save {tmp_path / 'r.xml'}", "--print-limit 0", "--error-exitcode 86",
                 f"--log-file {tmp_path / 'r.log'}", "--padding 32", "--kernel-name kne="):
        assert part in text
    child = cmd[cmd.index(sys.executable):]
    assert child[:4] == [sys.executable, "-m", "pytest", base] and "no:xdist" in child
    assert "--verifier-seed 3" in " ".join(child) and "--verifier-level quick" in " ".join(child)


def test_junit_worker_summary_counts_outcomes_and_isolation(tmp_path):
    sys.path.insert(0, str(REPO / "tools"))
    from junit_workers import render, summarize

    junit = tmp_path / "j.xml"
    junit.write_text("""<testsuites><testsuite>
      <testcase name="a"><properties><property name="kernel" value="k1"/><property name="worker" value="gw0"/>
        <property name="cuda_visible_devices" value="0"/></properties><failure message="x"/></testcase>
      <testcase name="b"><properties><property name="kernel" value="k2"/><property name="worker" value="gw0"/>
        <property name="cuda_visible_devices" value="0"/><property name="isolated" value="child"/></properties></testcase>
      <testcase name="c"><properties><property name="kernel" value="k2"/><property name="worker" value="gw1"/>
        <property name="cuda_visible_devices" value="1"/></properties></testcase>
    </testsuite></testsuites>""")
    rows = summarize(str(junit))
    assert rows[("gw0", "0")] == {"failure": 1, "passed": 1, "isolated": 1}
    assert rows[("gw1", "1")] == {"passed": 1, "isolated": 0}
    assert set(summarize(str(junit), "k2")) == {("gw0", "0"), ("gw1", "1")}
    assert "| gw0 | 0 | 1 | 1 | 0 | 0 | 1 |" in render(rows)

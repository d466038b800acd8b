"""`verifier bench` on a machine without a GPU: usage errors first (exit 2 with the fix), then exit 2 saying a
GPU is needed; the budget help agrees with the battery; the parent of isolated checks does not import torch."""
import subprocess
import sys
from pathlib import Path

import pytest

from verifier import cli
from verifier.errors import ToolMissing, UsageError

REPO = Path(__file__).resolve().parent.parent
SOFTMAX = str(REPO / "kernels" / "cuda" / "softmax_fast_spec.py")
TORCH = str(REPO / "kernels" / "torch")


@pytest.fixture
def no_gpu(monkeypatch):
    from verifier.bench import timing

    monkeypatch.setattr(timing, "gpu_available", lambda: False)


def _run(capsys, *argv):
    code = cli.main(["bench", *argv])
    return code, capsys.readouterr().err


def test_no_gpu_exits_2_with_a_clear_message(capsys, no_gpu):
    code, err = _run(capsys, SOFTMAX, "--against", TORCH)
    assert code == 2
    assert "verifier bench needs a CUDA GPU and torch sees none" in err and "fix:" in err
    assert "Traceback" not in err


def test_run_bench_refuses_without_gpu(no_gpu):
    from verifier.declare import registry
    from verifier.bench.timing import run_bench

    ks = registry.load([SOFTMAX])
    with pytest.raises(ToolMissing, match="needs a CUDA GPU"):
        run_bench(ks, [], [(4, 8)], [ks[0].dtypes[0]], runs=20)


@pytest.mark.parametrize("argv, msg", [
    (["--shape", "8192"], "--shape '8192' is not MxN"),
    (["--runs", "5"], "--runs '5' is not a whole number >= 20"),
    (["--runs", "many"], "--runs 'many' is not a whole number"),
    (["--warmup", "0"], "--warmup '0'"),
    (["--format", "xml"], "--format 'xml' is not a format"),
    (["--dtype", "e4m3"], "--dtype e4m3 is declared by none of the kernels"),
    (["--against", "no/such_spec.py"], "--against no/such_spec.py: no such spec file"),
    (["--against", "nothing-like-this*"], "matches no kernel"),
    (["--kernel", "nope*"], "no kernel matches nope*"),
    (["--plot", "out.svg"], "not a .png file"),
    (["--output", "/no/such/dir/x.txt"], "not a file in an existing directory"),
])
def test_usage_errors_exit_2_before_any_gpu_work(capsys, no_gpu, argv, msg):
    code, err = _run(capsys, SOFTMAX, *argv)
    assert code == 2, err
    assert msg in err
    assert "needs a CUDA GPU" not in err  # the user's mistake is named first


def test_against_kernels_of_another_op_is_a_usage_error(capsys, no_gpu):
    code, err = _run(capsys, SOFTMAX, "--against", str(REPO / "kernels" / "cuda" / "rmsnorm_spec.py"))
    assert code == 2 and "--against names no kernel of the op(s) benchmarked (softmax)" in err


def test_against_glob_over_the_paths(no_gpu):
    from verifier.declare import registry
    from verifier.cli.bench import _against

    mains = registry.load([SOFTMAX], ["cuda-softmax-s5"])
    got = _against(["cuda-softmax-s*"], [SOFTMAX], mains)
    assert [k.name for k in got] == ["cuda-softmax-s5f", "cuda-softmax-split"]  # the benchmarked kernel is not its own rival
    got = _against(["cuda-softmax-[sc]*"], [SOFTMAX], mains)
    assert {k.name for k in got} == {"cuda-softmax-s5f", "cuda-softmax-split", "cuda-softmax-cluster"}
    got = _against([TORCH], [SOFTMAX], mains)
    assert "torch-softmax" in {k.name for k in got}


def test_plot_without_matplotlib_is_a_usage_error(monkeypatch):
    import builtins

    from verifier.bench import plot

    real = builtins.__import__

    def no_mpl(name, *a, **k):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    with pytest.raises(UsageError, match=r"kernel-verifier\[plot\]"):
        plot.require_matplotlib()


def test_bench_help_lists_the_options(capsys):
    with pytest.raises(SystemExit):
        cli.main(["bench", "--help"])
    out = capsys.readouterr().out
    for opt in ("--kernel", "--shape", "--dtype", "--against", "--format", "--plot", "--runs", "8192x3584",
                "32x152064"):
        assert opt in out


def test_bandwidth_script_is_a_thin_caller():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import bandwidth
    finally:
        sys.path.pop(0)
    argv = bandwidth.argv(["--dtype", "bf16"])
    assert argv[0] == "bench" and argv[-2:] == ["--dtype", "bf16"]
    assert any(a.endswith("softmax_fast_spec.py") for a in argv)
    assert any(a.endswith("liger_spec.py") for a in argv) and any(a.endswith("kernels/torch") for a in argv)


def test_level_help_matches_the_battery():
    from verifier.results.levels import TABLE

    h = cli.LEVEL_HELP
    assert TABLE["quick"].hypothesis == 0 and "quick: a handful of catalogue cases, no Hypothesis" in h
    for name in ("quick", "ci", "thorough"):
        part = h.split(f"{name}:")[1]
        assert f"{TABLE[name].repeats} determinism repeats" in part.split(";")[0] or \
            f"{TABLE[name].repeats} repeats" in part.split(";")[0]
        if TABLE[name].hypothesis:
            assert f"{TABLE[name].hypothesis} Hypothesis examples" in part.split(";")[0]
    # thorough does measurably more than ci in every row
    assert TABLE["thorough"].hypothesis > TABLE["ci"].hypothesis
    assert TABLE["thorough"].repeats > TABLE["ci"].repeats
    assert TABLE["thorough"].rows and not TABLE["ci"].rows


def test_check_parent_does_not_import_torch():
    """Choosing the device and describing the environment must not import torch (4-5 s on an H200 machine)."""
    code = ("import sys\n"
            "from verifier.gpu.probe import resolve_device\n"
            "from verifier.report.environment import environment\n"
            "d = resolve_device('auto'); env = environment()\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n"
            "print(d, env['torch'])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] in ("cpu", "cuda")


def test_cuda_probe(monkeypatch):
    import types

    from verifier.gpu import probe as cuda_probe

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: True))
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert cuda_probe.cuda_available() is True  # an imported torch answers
    monkeypatch.delitem(sys.modules, "torch")

    def boom():
        raise AssertionError("the driver must not be asked for a CPU build")

    monkeypatch.setattr(cuda_probe, "fork_safe_device_count", boom)
    monkeypatch.setattr(cuda_probe, "torch_version", lambda: "2.13.0+cpu")
    assert cuda_probe.cuda_available() is False
    monkeypatch.setattr(cuda_probe, "torch_version", lambda: None)
    assert cuda_probe.cuda_available() is False
    monkeypatch.setattr(cuda_probe, "torch_version", lambda: "2.11.0+cu130")
    monkeypatch.setattr(cuda_probe, "fork_safe_device_count", lambda: 0)
    assert cuda_probe.cuda_available() is False
    monkeypatch.setattr(cuda_probe, "fork_safe_device_count", lambda: 2)
    assert cuda_probe.cuda_available() is True
    # torch imported but its CUDA not yet up: the driver is asked the fork-safe way, not through torch (whose
    # is_available would initialise the driver here and leave this process unfit to fork CUDA children)
    up = types.SimpleNamespace(is_initialized=lambda: False, is_available=lambda: pytest.fail("torch asked"))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=up, version=types.SimpleNamespace(cuda="13.0")))
    assert cuda_probe.cuda_available() is True


def test_torch_cuda_version_from_its_version_file():
    from verifier.report.environment import cuda_from_version_file

    assert cuda_from_version_file("__version__ = '2.11.0+cu130'\ncuda: Optional[str] = '13.0'\n") == "13.0"
    assert cuda_from_version_file("cuda = '12.4'\n") == "12.4"
    assert cuda_from_version_file("cuda: Optional[str] = None\n") is None


@pytest.mark.parametrize("env, runs, want", [("3", 12, 3), ("40", 12, 12), ("0", 12, 1), (None, 1, 1)])
def test_sanitize_hook_jobs(monkeypatch, env, runs, want):
    from verifier.sanitizer.runs import hook_jobs

    if env is None:
        monkeypatch.delenv("VERIFIER_SANITIZE_JOBS", raising=False)
    else:
        monkeypatch.setenv("VERIFIER_SANITIZE_JOBS", env)
    assert hook_jobs(runs) == want


def test_sanitize_hook_jobs_default_and_bad_value(monkeypatch):
    from verifier.sanitizer.runs import hook_jobs

    monkeypatch.delenv("VERIFIER_SANITIZE_JOBS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert hook_jobs(12) == 8
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert hook_jobs(12) == 1  # CI's two cores: one run at a time
    monkeypatch.setenv("VERIFIER_SANITIZE_JOBS", "many")
    with pytest.raises(UsageError, match="VERIFIER_SANITIZE_JOBS='many'"):
        hook_jobs(12)

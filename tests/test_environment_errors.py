"""Environment problems are usage errors with the fix (exit 2), never "internal error" (exit 3), and output paths are
checked before the run starts (issue 35, item 7).

Tests run as root, for whom chmod does not stop a write: the unwritable places here are ones root cannot write
either (a path under a regular file, an existing file as a directory, /proc), and a full disk is /dev/full (every
write: ENOSPC) or, inside the build cache, a write that raises ENOSPC."""
import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from verifier.cli import main
from verifier.errors import UsageError
from verifier.toolchain import nvcc

ROOT = Path(__file__).resolve().parents[1]
CUDA_SPEC = str(ROOT / "kernels" / "cuda" / "softmax_spec.py")
CUDA_KERNEL = "cuda-softmax-s3"
needs_nvcc = pytest.mark.skipif(nvcc.nvcc_version() is None, reason="building CUDA kernels needs nvcc, not found")

SPEC = """
import os, torch
from verifier.spec import CallableKernel, dtypes

def good(inputs, outputs, params, dt):
    open(os.environ["RAN_MARKER"], "w").close()  # the run started
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))

KERNELS = [CallableKernel(name="good", op="softmax", fn=good, dtypes=[dtypes("f32")])]
"""
FAST = ("--level", "quick", "--case", "normal_small", "--device", "cpu", "--no-progress")


@pytest.fixture
def env(monkeypatch, tmp_path):
    for k in list(os.environ):
        if k.startswith("VERIFIER_") and k != "VERIFIER_PYCACHE":
            monkeypatch.delenv(k)
    monkeypatch.setenv("RAN_MARKER", str(tmp_path / "ran"))
    a_file = tmp_path / "a_file"
    a_file.write_text("not a directory\n")
    return a_file


@pytest.fixture
def spec(tmp_path):
    p = tmp_path / "k_spec.py"
    p.write_text(SPEC)
    return str(p)


# --- the build cache: VERIFIER_CACHE_DIR, XDG_CACHE_HOME, HOME ----------------------------------------------------
def _cache_cases(a_file: Path):
    return {
        "under a file": ({"VERIFIER_CACHE_DIR": str(a_file / "sub")}, "$VERIFIER_CACHE_DIR", "Not a directory"),
        "a file": ({"VERIFIER_CACHE_DIR": str(a_file)}, "$VERIFIER_CACHE_DIR", "it is not a directory"),
        "under /proc": ({"VERIFIER_CACHE_DIR": "/proc/kernel-verifier-cache"}, "$VERIFIER_CACHE_DIR", ""),
        "read-only HOME": ({"HOME": str(a_file)}, "~/.cache/kernel-verifier under $HOME", "Not a directory"),
    }


@needs_nvcc
@pytest.mark.parametrize("case", ["under a file", "a file", "under /proc", "read-only HOME"])
def test_an_unusable_build_cache_is_exit_2_naming_the_setting(case, env, monkeypatch, capsys):
    variables, setting, why = _cache_cases(env)[case]
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    for k, v in variables.items():
        monkeypatch.setenv(k, v)
    for command in (["check", CUDA_SPEC, "--kernel", CUDA_KERNEL, *FAST[:6]],
                    ["lint", CUDA_SPEC, "--kernel", CUDA_KERNEL]):
        assert main(command + ["--no-progress"]) == 2, command
        err = capsys.readouterr().err
        assert f"cannot write to the build cache {nvcc.cache_dir()} ({setting})" in err and why in err, err
        assert "fix: set VERIFIER_CACHE_DIR to a writable directory" in err
        assert "internal error" not in err


def test_a_kernel_that_builds_nothing_does_not_need_the_cache(env, spec, monkeypatch, capsys):
    monkeypatch.setenv("VERIFIER_CACHE_DIR", str(env / "sub"))
    assert main(["check", spec, *FAST]) == 0
    capsys.readouterr()


@needs_nvcc
def test_a_cache_that_fills_during_a_build_is_exit_2(env, tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    monkeypatch.setenv("VERIFIER_CACHE_DIR", str(cache))

    def full(kind, root, *a, **kw):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(root / kind / "x.cubin"))

    monkeypatch.setattr(nvcc, "_build_cached", full)
    with pytest.raises(UsageError, match=r"the build cache .*\(\$VERIFIER_CACHE_DIR\): the disk is full"):
        nvcc.compile_ptx(ROOT / "kernels" / "cuda" / "softmax.cu", arch="sm_90")
    assert main(["check", CUDA_SPEC, "--kernel", CUDA_KERNEL, *FAST, "-j", "1"]) == 2
    err = capsys.readouterr().err
    assert "the disk is full" in err and "fix: set VERIFIER_CACHE_DIR" in err and "internal error" not in err


# --- output paths: checked before the run, a full disk after it --------------------------------------------------
UNWRITABLE = ["/proc/version", "/proc/kernel-verifier-report.txt", "{a_file}/report.txt", "{a_file_dir}"]


@pytest.mark.parametrize("where", UNWRITABLE)
def test_an_unwritable_output_stops_check_before_the_run(where, env, spec, tmp_path, capsys):
    path = where.format(a_file=env, a_file_dir=tmp_path)
    assert main(["check", spec, *FAST, "--output", path]) == 2
    err = capsys.readouterr().err
    assert f"--output {path}:" in err and "fix:" in err
    assert not (tmp_path / "ran").exists(), "the run started before the output path was checked"


def test_variable_output_is_named_and_checked_first(env, spec, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VERIFIER_OUTPUT", "/proc/version")
    assert main(["check", spec, *FAST]) == 2
    assert "VERIFIER_OUTPUT /proc/version: cannot write it" in capsys.readouterr().err
    assert not (tmp_path / "ran").exists()


def test_a_new_output_path_is_not_left_behind_by_the_check(env, spec, tmp_path, monkeypatch, capsys):
    from verifier.cli import preflight

    out = tmp_path / "new.json"
    preflight.output_file(str(out))
    assert not out.exists()
    kept = tmp_path / "kept.txt"
    kept.write_text("old\n")
    preflight.output_file(str(kept))
    assert kept.read_text() == "old\n"


@pytest.mark.parametrize("command", [["lint", CUDA_SPEC], ["sanitize", CUDA_SPEC], ["bench", CUDA_SPEC]])
def test_lint_sanitize_bench_check_their_output_first(command, env, capsys):
    assert main(command + ["--output", "/proc/version"]) == 2
    err = capsys.readouterr().err
    assert "--output /proc/version: cannot write it" in err and "no CUDA GPU" not in err


def test_sanitize_keep_xml_and_bench_plot_are_checked_first(env, capsys):
    assert main(["sanitize", CUDA_SPEC, "--keep-xml", "/proc/kv-xml"]) == 2
    assert "--keep-xml /proc/kv-xml: cannot write files into it" in capsys.readouterr().err
    assert main(["bench", CUDA_SPEC, "--plot", "/proc/kv.png"]) == 2
    assert "--plot /proc/kv.png: cannot write it" in capsys.readouterr().err


def test_output_on_a_full_disk_is_exit_2(env, spec, capsys):
    assert main(["check", spec, *FAST, "--output", "/dev/full"]) == 2
    err = capsys.readouterr().err
    assert "cannot write --output /dev/full: the disk is full" in err and "internal error" not in err


def test_stdout_on_a_full_disk_is_exit_2_without_a_traceback(env, spec, tmp_path):
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "verifier.cli", "check", spec, *FAST], stdout=full,
                           stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=600,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 2, p.stderr
    assert "cannot write the report to stdout: the disk is full" in p.stderr
    assert "Traceback" not in p.stderr and "Exception ignored" not in p.stderr


def test_the_pytest_plugin_says_an_unusable_cache_at_collection(env, tmp_path):
    run_env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "VERIFIER_"))}
    run_env["VERIFIER_CACHE_DIR"] = str(env / "sub")
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
                        "suites/test_ops.py", "--verifier-kernels", CUDA_KERNEL, "-k", "build"],
                       capture_output=True, text=True, cwd=ROOT, env=run_env, timeout=600)
    assert p.returncode == 4, p.stdout[-2000:] + p.stderr[-2000:]
    assert f"cannot write to the build cache {env / 'sub'} ($VERIFIER_CACHE_DIR)" in p.stderr
    assert "Traceback" not in p.stderr


def test_triton_cache_under_a_read_only_home_is_said_before_a_gpu_run(env, monkeypatch):
    """Compiled Triton (a GPU) writes ~/.triton/cache: checked as verifier check does on a GPU machine; the
    interpreter (no GPU) needs nothing there."""
    from verifier.cli import preflight
    from verifier.declare.registry import load

    triton = load([str(ROOT / "kernels" / "triton" / "spec.py")], ["triton-softmax"])
    for k in ("TRITON_CACHE_DIR", "TRITON_HOME"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(env))
    preflight.triton_cache(triton, "cpu")  # the interpreter: nothing to write
    with pytest.raises(UsageError, match=r"Triton's kernel cache .*\(~/.triton/cache under \$HOME\): Not a directory"):
        preflight.triton_cache(triton, "cuda")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(env))
    with pytest.raises(UsageError, match=r"\(\$TRITON_CACHE_DIR\): it is not a directory") as e:
        preflight.triton_cache(triton, "cuda")
    assert "TRITON_CACHE_DIR=" in e.value.fix
    monkeypatch.setenv("TRITON_CACHE_DIR", str(env.parent / "triton-cache"))
    preflight.triton_cache(triton, "cuda")

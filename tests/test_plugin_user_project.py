"""``pytest --verifier-specs PATH`` in a user's own project (issue #35 item 11): no suites/test_ops.py there, so the
plugin generates the op suites of those spec files' kernels itself (verifier.plugin.suites), and only theirs unless
--verifier-bundled; a correct kernel passes, a wrong one fails with its finding, one returning the wrong shape
fails with a short error (no internal traceback), and the session ends with the plugin's line. In this checkout,
where suites/test_ops.py runs the same kernels, nothing is generated twice."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from child_sessions import NO_HYPOTHESIS_PLUGIN

REPO = Path(__file__).resolve().parents[1]

SPEC = textwrap.dedent('''
    import torch
    from verifier.spec import CallableKernel, dtypes

    def good(i, o, p, d):
        return {"y": torch.softmax(i["x"].float(), -1).to(o["y"].dtype)}

    def sloppy(i, o, p, d):  # rounds its input to bfloat16 first: far over the float32 budget
        return {"y": torch.softmax(i["x"].to(torch.bfloat16).float(), -1).to(o["y"].dtype)}

    def wrong_shape(i, o, p, d):
        return {"y": torch.softmax(i["x"].float(), -1)[:, :1]}

    KERNELS = [
        CallableKernel(name="my-good", op="softmax", fn=good, dtypes=[dtypes("f32")]),
        CallableKernel(name="my-sloppy", op="softmax", fn=sloppy, dtypes=[dtypes("f32")]),
        CallableKernel(name="my-wrong-shape", op="softmax", fn=wrong_shape, dtypes=[dtypes("f32")]),
    ]
''')


def _env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VERIFIER_", "PYTEST_XDIST", "PYTEST_ADDOPTS")) and k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _pytest(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-p",
                           "no:xdist", *NO_HYPOTHESIS_PLUGIN, "-p", "verifier.pytest_plugin", "--verifier-device", "cpu", "--verifier-level", "quick",
                           *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300)


def _project(tmp_path):
    proj = tmp_path / "proj"
    (proj / "specs").mkdir(parents=True)
    (proj / "specs" / "my_spec.py").write_text(SPEC)
    (proj / "tests").mkdir()
    (proj / "tests" / "test_theirs.py").write_text("def test_their_own():\n    assert True\n")
    return proj


def test_the_spec_files_suites_are_generated_and_run_in_the_users_project(tmp_path):
    proj = _project(tmp_path)
    r = _pytest("--verifier-specs", "specs", "-rfE", cwd=proj)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out  # some tests failed (it was 5: nothing collected)
    assert "kernel-verifier: " in out and "tests not generated on this machine" in out, out  # the plugin's line
    failed = {ln.split(" ")[1] for ln in r.stdout.splitlines() if ln.startswith("FAILED ")}
    assert failed and all(f.startswith("specs/my_spec.py::test_softmax") for f in failed), failed
    assert not [f for f in failed if "my-good" in f], failed
    assert [f for f in failed if "[my-sloppy-f32-normal_small]" in f], failed
    assert [f for f in failed if "[my-wrong-shape-f32-normal_small]" in f], failed
    assert "torch-softmax" not in out  # the bundled kernels are not the user's: not generated unless asked
    passed = int(r.stdout.strip().splitlines()[-1].split(" passed")[0].split()[-1])
    assert passed >= 8, r.stdout[-2000:]  # my-good's cases, refusal, determinism and the project's own test


def test_a_wrong_output_shape_fails_in_a_few_lines_without_a_traceback(tmp_path):
    proj = _project(tmp_path)
    r = _pytest("--verifier-specs", "specs", "-k", "my-wrong-shape and normal_small", cwd=proj)
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    body = out.split("test_softmax[my-wrong-shape-f32-normal_small]", 1)[1].split("short test summary", 1)[0]
    lines = [ln for ln in body.splitlines() if ln.strip() and not ln.startswith(("kernel-verifier:", "="))]
    assert len(lines) <= 4, body
    assert "returned output 'y' of shape (4, 1)" in body and "fix: return tensors of the op's output shapes" in body
    assert "Traceback" not in out and "During handling" not in out and "verifier/" not in body, body


def test_a_failing_tests_repro_line_reruns_it_from_the_project(tmp_path):
    proj = _project(tmp_path)
    r = _pytest("--verifier-specs", "specs", "-k", "my-sloppy and normal_small", cwd=proj)
    assert r.returncode == 1, r.stdout + r.stderr
    repro = next(ln for ln in r.stdout.splitlines() if ln.startswith("pytest repro: "))[len("pytest repro: "):]
    assert "specs/my_spec.py::test_softmax[my-sloppy-f32-normal_small]" in repro, repro
    import shlex

    args = shlex.split(repro)[1:]
    again = _pytest(*args, "-rA", cwd=proj)
    assert again.returncode == 1 and "1 failed" in again.stdout, again.stdout + again.stderr
    assert "FAILED specs/my_spec.py::test_softmax[my-sloppy-f32-normal_small]" in again.stdout


def test_bundled_kernels_join_only_when_asked(tmp_path):
    proj = _project(tmp_path)
    r = _pytest("--verifier-specs", "specs", "--verifier-bundled", "--co", "-q", "-k", "test_softmax and f32-normal_small",
                cwd=proj)
    assert r.returncode == 0, r.stdout + r.stderr
    ids = [ln for ln in r.stdout.splitlines() if "::" in ln]
    assert any("[my-good-f32-normal_small]" in i for i in ids), ids
    assert any("[torch-softmax-f32-normal_small]" in i for i in ids), ids


def test_in_the_checkout_the_suite_module_runs_them_and_nothing_is_generated_twice(tmp_path):
    proj = _project(tmp_path)
    spec = str(proj / "specs" / "my_spec.py")
    r = _pytest("--co", "-q", "suites/test_ops.py", spec, "--verifier-specs", spec, "-k", "my-good", cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    ids = [ln for ln in r.stdout.splitlines() if "::" in ln]
    assert ids and all(i.startswith("suites/test_ops.py::") for i in ids), ids
    assert len(ids) == len(set(i.split("::", 1)[1] for i in ids)), ids
    # a checkout test module without the suites: the spec file's suites are generated there too
    r = _pytest("--co", "-q", "tests/test_ulp.py", "--verifier-specs", spec, "-k", "my-good", cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    assert any("my_spec.py::test_softmax[my-good-f32-normal_small]" in ln for ln in r.stdout.splitlines()), r.stdout

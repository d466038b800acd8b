"""The pytest plugin under issue #13: an undeclared spill passes its build test with a warning (junit property,
pytest warning) and fails it under --verifier-strict; a case left out by a declared contract is not generated (the
session's last line counts it, with the reason); a spec whose supports() raises fails its own tests with the spec error while the other kernels run."""
import textwrap
from pathlib import Path

import pytest

from test_pytest_plugin import _cases, _pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "kernels" / "defects" / "cuda" / "resource_defects.cu"

SPEC = f'''
import torch
import torch.nn.functional as F
from verifier.spec import CallableKernel, Contracts, CudaKernel, Launch, dtypes

def launches(M, N, dt, params):
    return [Launch(entry="rmsnorm_regs_spill_f32", grid=(M,), block=(256,), args=("x", "w", "y", "M", "N", "eps"))]

def small(M, N, dt):
    return None if N <= 8192 else "N > 8192"

def rms(i, o, p, d):
    x = i["x"]
    o["y"].copy_(F.rms_norm(x.float(), (x.shape[-1],), i["w"].float(), eps=p["eps"]))

def broken(M, N, dt):
    return helper_that_does_not_exist(N)

KERNELS = [
    CudaKernel(name="user-spill", op="rmsnorm", source="{SOURCE}", launches=launches, dtypes=[dtypes("f32")],
               supports=small),
    CallableKernel(name="user-nonan", op="rmsnorm", fn=rms, dtypes=[dtypes("f32")], supports=small,
                   contracts=Contracts(nan_inputs="unsupported")),
    CallableKernel(name="user-broken", op="rmsnorm", fn=rms, dtypes=[dtypes("f32")], supports=broken),
]
'''


def _run(tmp_path, *extra):
    (tmp_path / "user_spec.py").write_text(textwrap.dedent(SPEC))
    junit = tmp_path / "junit.xml"
    r = _pytest("suites/test_ops.py", "--verifier-specs", str(tmp_path / "user_spec.py"), "--verifier-kernels",
                "user-*", "--verifier-device", "cpu", "-k",
                "test_rmsnorm and (build or some_nan or normal_small or spec-error)",
                f"--junitxml={junit}", *extra)
    return r, _cases(junit)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("plain"))


def test_undeclared_spill_passes_its_build_with_a_warning(plain):
    r, cases = plain
    kind, _, props = cases["test_rmsnorm_build[user-spill]"]
    if kind == "skipped":
        pytest.skip("nvcc is not installed here")
    assert kind == "passed", r.stdout
    assert any("spills" in w and "declares no limit" in w for w in props["warning"])
    assert "VerifierWarning" in r.stdout and "--verifier-strict fails on them" in r.stdout


def test_strict_fails_the_build_on_the_warning(tmp_path):
    r, cases = _run(tmp_path, "--verifier-strict")
    kind, text, props = cases["test_rmsnorm_build[user-spill]"]
    if kind == "skipped":
        pytest.skip("nvcc is not installed here")
    assert kind == "failure" and "[resources warning]" in text and "spills" in text
    assert cases["test_rmsnorm[user-nonan-f32-normal_small]"][0] == "passed"  # errors-free tests still pass


def test_case_left_out_by_a_contract_is_not_generated_but_counted_with_the_reason(plain):
    r, cases = plain
    assert "test_rmsnorm[user-nonan-f32-some_nan]" not in cases  # it could only skip: its NaN inputs are left out
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("kernel-verifier: ")]
    assert "a case whose inputs the kernel's declared contracts leave out (not checked: declared " \
           "nan_inputs=unsupported)" in line, line
    assert cases["test_rmsnorm[user-nonan-f32-normal_small]"][0] == "passed"


def test_spec_error_fails_that_kernel_only(plain):
    r, cases = plain
    kind, text, _ = cases["test_rmsnorm[user-broken-f32-spec-error]"]
    assert kind in ("error", "failure") and "supports() of spec file" in text
    assert "NameError: name 'helper_that_does_not_exist' is not defined" in text
    assert r.returncode == 1, r.stdout[-2000:]  # test failures, not an internal error or a usage error

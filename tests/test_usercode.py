"""Errors blamed on the right code (verifier.declare.usercode, issue #13): a Python exception the kernel raises on some
accepted shapes is a refusal with the fix; on every input, or a TypeError / NameError, it is that kernel's error;
a CUDA fault stays a crash; an exception in the spec's supports / launches / defines is that kernel's error
(verdict 'error', spec file, function, the user's frame) and the run goes on with exit 1, not 3."""
import json
import textwrap
import xml.etree.ElementTree as ET

import pytest

from verifier import cli
from verifier.isolation import check_all
from verifier.results.options import Options
from verifier.declare.registry import load_spec_file
from verifier.report import render
from verifier.results.run import Result
from verifier.results.serialize import from_dict

QUICK = Options(level="quick", device="cpu")

SPEC = '''
import torch
from verifier.spec import CallableKernel, CudaKernel, Launch, dtypes

def small(M, N, dt):
    return None if N <= 4096 else "N > 4096"

def good(i, o, p, d):
    o["y"].copy_(torch.softmax(i["x"].float(), -1))

def liger(i, o, p, d):
    n = i["x"].shape[-1]
    if n > 1024:
        raise RuntimeError(f"Cannot launch Triton kernel since n = {n} exceeds the recommended blocksize 1024")
    o["y"].copy_(torch.softmax(i["x"].float(), -1))

def bad_supports(M, N, dt):
    return undefined_helper(N)

def always(i, o, p, d):
    raise RuntimeError("not implemented yet")

def typo(i, o, p, d):
    o["y"].copy_(softmaxx(i["x"]))

def bad_call(i, o, p):
    o["y"].copy_(torch.softmax(i["x"].float(), -1))

def cuda_fault(i, o, p, d):
    raise RuntimeError("CUDA error: an illegal memory access was encountered")

def bad_launches(M, N, dt, params):
    return [Launch(entry="k", grid=(M,), block=(256,), args=("x", "y", "M", "N"), smem=1 / 0)]

def bad_defines(dt):
    return {"T": dt.nope}

def launches(M, N, dt, params):
    return [Launch(entry="k", grid=(M,), block=(256,), args=("x", "y", "M", "N"))]

F32 = [dtypes("f32")]
KERNELS = [
    CallableKernel(name="good", op="softmax", fn=good, dtypes=F32, supports=small),
    CallableKernel(name="liger", op="softmax", fn=liger, dtypes=F32, supports=small),
    CallableKernel(name="badsupports", op="softmax", fn=good, dtypes=F32, supports=bad_supports),
    CallableKernel(name="always", op="softmax", fn=always, dtypes=F32, supports=small),
    CallableKernel(name="typo", op="softmax", fn=typo, dtypes=F32, supports=small),
    CallableKernel(name="badcall", op="softmax", fn=bad_call, dtypes=F32, supports=small),
    CallableKernel(name="fault", op="softmax", fn=cuda_fault, dtypes=F32, supports=small, device="cpu"),
    CudaKernel(name="badlaunches", op="softmax", source="nowhere.cu", launches=bad_launches, dtypes=F32),
    CudaKernel(name="baddefines", op="softmax", source="nowhere.cu", launches=launches, defines=bad_defines,
               dtypes=F32),
]
'''


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("usercode") / "user_spec.py"
    p.write_text(textwrap.dedent(SPEC))
    return p


@pytest.fixture(scope="module")
def kernels(spec_file):
    return {k.name: k for k in load_spec_file(spec_file)}


@pytest.fixture(scope="module")
def reports(kernels):
    return {r.spec.name: r for r in check_all(list(kernels.values()), QUICK, isolate=False)}


def test_exception_on_some_accepted_shapes_is_a_refusal_with_the_fix(reports):
    r = reports["liger"]
    assert r.verdict == "fail" and r.error is None
    assert {f.check for f in r.findings} == {"refusal"}
    f = next(f for f in r.findings if f.input == "boundary_n4096")
    assert "Cannot launch Triton kernel since n = 4096 exceeds" in f.message
    assert "fix: declare supports() returning this reason if the refusal is deliberate" in f.message
    assert "user_spec.py:14 in liger" in f.message  # the user's frame that raised
    assert r.cells[("f32", "value")] == "pass"  # the shapes it runs are still checked


@pytest.mark.parametrize("name, needle", [
    ("always", "fn() raised on every one of the"),
    ("typo", "NameError: name 'softmaxx' is not defined"),
    ("badcall", "TypeError"),
])
def test_raising_everywhere_or_a_programming_error_is_the_kernels_error(reports, spec_file, name, needle):
    r = reports[name]
    assert r.verdict == "error" and r.error_kind == "user", r.error
    assert needle in r.error and str(spec_file) in r.error
    assert not [f for f in r.findings if f.check == "refusal"]  # one error, not a refusal per input
    assert not any(v == "pass" for (_, c), v in r.cells.items() if c in ("value", "invariant", "nan-inf"))


def test_cuda_fault_stays_a_crash(reports):
    r = reports["fault"]
    assert {f.check for f in r.findings} == {"crash"} and r.error is None


@pytest.mark.parametrize("name, function, needle", [
    ("badsupports", "supports", "NameError: name 'undefined_helper' is not defined"),
    ("badlaunches", "launches", "ZeroDivisionError"),
    ("baddefines", "defines", "AttributeError"),
])
def test_exception_in_spec_code_is_that_kernels_error(reports, spec_file, name, function, needle):
    r = reports[name]
    assert r.verdict == "error" and r.error_kind == "user"
    assert f"kernel {name}: {function}() of spec file {spec_file} raised {needle}" in r.error
    assert f"(at {spec_file}:" in r.error and f"fix {function}() in {spec_file}" in r.error


def test_the_run_goes_on_and_exits_1_not_3(reports, spec_file):
    assert reports["good"].verdict == "pass"
    res = Result(reports=list(reports.values()))
    assert res.exit_code() == 1
    text = render(res, "text")
    assert "== badsupports: error in the spec's own code" in text and "internal error" not in text
    data = json.loads(render(res, "json"))
    kinds = {k["name"]: k["error_kind"] for k in data["kernels"]}
    assert kinds["badsupports"] == "user" and kinds["good"] is None
    assert from_dict(data).exit_code() == 1  # a saved result keeps the distinction
    junit = ET.fromstring(render(res, "junit").split("?>", 1)[1])
    assert any(e.get("type") == "spec-error" for e in junit.iter("error"))
    sarif = json.loads(render(res, "sarif"))
    assert sarif["runs"][0]["invocations"][0]["executionSuccessful"] is True


def test_an_internal_error_still_exits_3(reports):
    from verifier.results.kernel import KernelReport

    bug = KernelReport(spec=reports["good"].spec, device="cpu")
    bug.error = "KeyError: 'x'"
    assert Result(reports=[reports["good"], bug]).exit_code() == 3


def test_cli_checks_every_kernel_and_exits_1(spec_file, capsys):
    code = cli.main(["check", str(spec_file), "--kernel", "good", "--kernel", "badsupports", "--budget", "quick",
                     "--device", "cpu", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "badsupports" in out and "good" in out and "supports() of spec file" in out
    assert "1 pass" in err and "1 error" in err and "internal error" not in err

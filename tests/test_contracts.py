"""Declared contracts (verifier.declare.contracts, issue #13): NaN / inf inputs declared unsupported are left out and
listed, subnormals='flush' lets a flushing kernel pass without letting a wrong one through, -ftz=true /
--use_fast_math infer it, and bad Contracts arguments are refused with the allowed values."""
import json
import textwrap

import numpy as np
import pytest

from verifier.declare import contracts
from verifier.battery import check_kernel
from verifier.results.options import Options
from verifier.errors import SpecError
from verifier.report import render
from verifier.results.run import Result
from verifier.spec import CallableKernel, Contracts, CudaKernel, Launch, dtypes

from test_battery import write_spec
from verifier.declare.registry import load_spec_file

_N = [0]


def one(tmp_path, body):
    """The kernel of a fresh spec file (the registry caches a module per path, so each gets its own)."""
    _N[0] += 1
    body = "from verifier.spec import Contracts\n" + textwrap.dedent(body)
    return load_spec_file(write_spec(tmp_path, body, name=f"c{_N[0]}_spec.py"))[0]

QUICK = Options(level="quick", device="cpu")

SWALLOW = """
def fn(inputs, outputs, params, dt):  # NaN treated as a masked -inf: the row stays finite
    x = inputs["x"].float()
    outputs["y"].copy_(torch.softmax(torch.where(torch.isnan(x), torch.full_like(x, float("-inf")), x), -1))
"""

FTZ = """
TINY = torch.finfo(torch.float32).tiny
def ftz(t):
    return torch.where(t.abs() < TINY, t * 0.0, t)
def flushing(inputs, outputs, params, dt):
    outputs["y"].copy_(ftz(ftz(inputs["x"].float()).sum(-1)))
def keeping(inputs, outputs, params, dt):
    outputs["y"].copy_(inputs["x"].float().sum(-1))
def off(inputs, outputs, params, dt):  # 5% off everywhere: a flush contract must not hide it
    outputs["y"].copy_(inputs["x"].float().sum(-1) * 1.05)
"""


def _case(case):
    return Options(level="ci", device="cpu", case=case)


@pytest.mark.parametrize("kwargs, needle", [
    ({"nan_inputs": "ignore"}, "Contracts(nan_inputs='ignore'): 'ignore' is not a nan_inputs contract"),
    ({"inf_inputs": "maybe"}, "Contracts(inf_inputs='maybe')"),
    ({"subnormals": "ftz"}, "Contracts(subnormals='ftz')"),
])
def test_bad_contract_values_name_the_value_and_the_allowed_ones(kwargs, needle):
    with pytest.raises(SpecError) as e:
        Contracts(**kwargs)
    assert needle in str(e.value)
    name = next(iter(kwargs))
    for allowed in contracts.ALLOWED[name]:
        assert repr(allowed) in e.value.fix


def test_contracts_field_must_be_a_contracts():
    with pytest.raises(SpecError) as e:
        CallableKernel(name="k", op="softmax", fn=lambda *a: None, dtypes=[dtypes("f32")],
                       contracts={"nan_inputs": "unsupported"})
    assert "field 'contracts' must be a Contracts, got dict" in str(e.value)


def test_defaults_are_propagate_propagate_preserve():
    spec = CallableKernel(name="k", op="softmax", fn=lambda *a: None, dtypes=[dtypes("f32")])
    c, notes = contracts.effective(spec)
    assert (c.nan_inputs, c.inf_inputs, c.subnormals) == ("propagate", "propagate", "preserve") and notes == []


def test_nan_swallowing_kernel_is_caught_by_default_and_passes_when_declared(tmp_path):
    plain = one(tmp_path, SWALLOW + 'KERNELS = [CallableKernel(name="k", op="softmax", fn=fn, dtypes=[dtypes("f32")])]')
    r = check_kernel(plain, _case("some_nan"))
    assert r.verdict == "fail" and "nan-inf" in {f.check for f in r.findings}
    declared = one(tmp_path, SWALLOW + 'KERNELS = [CallableKernel(name="k", op="softmax", fn=fn, dtypes=[dtypes("f32")], '
                                       'contracts=Contracts(nan_inputs="unsupported"))]')
    r = check_kernel(declared, _case("some_nan"))
    assert not r.findings
    assert "[f32] case some_nan not checked: declared nan_inputs=unsupported" in r.notes
    assert r.cells[("f32", "value")].reason.startswith("not checked: declared nan_inputs=unsupported")
    # every other input still runs: the whole quick battery passes
    r = check_kernel(declared, QUICK)
    assert r.verdict == "pass", [f.message for f in r.findings]
    res = Result(reports=[check_kernel(declared, _case("some_nan"))], options={"verbose": False})
    data = json.loads(render(res, "json"))
    assert "[f32] case some_nan not checked: declared nan_inputs=unsupported" in data["kernels"][0]["notes"]
    assert "1 catalogue case(s) not run" in render(res, "text")
    res.options["verbose"] = True
    assert "case some_nan not checked: declared nan_inputs=unsupported" in render(res, "text")


def test_inf_unsupported_leaves_out_every_case_with_an_infinity(tmp_path):
    spec = one(tmp_path, """
        def fn(inputs, outputs, params, dt):
            outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))
        KERNELS = [CallableKernel(name="k", op="softmax", fn=fn, dtypes=[dtypes("f32")], supports=small,
                                  contracts=Contracts(inf_inputs="unsupported"))]
        """)
    r = check_kernel(spec, Options(level="ci", device="cpu"))
    left = {n.split()[2] for n in r.notes if "not checked: declared inf_inputs=unsupported" in n}
    assert left == {"partial_neg_inf_mask", "one_neg_inf_row32", "fully_masked_rows"}
    assert not any("some_nan" in n for n in r.notes)  # NaN inputs are still checked
    assert r.verdict == "pass"


def test_flushing_kernel_fails_by_default_and_passes_declared(tmp_path):
    k = 'KERNELS = [CallableKernel(name="k", op="reduce_sum", fn={fn}, dtypes=[dtypes("f32")]{extra})]'
    plain = one(tmp_path, FTZ + k.format(fn="flushing", extra=""))
    r = check_kernel(plain, _case("subnormals"))
    assert "value" in {f.check for f in r.findings}
    flush = ', contracts=Contracts(subnormals="flush")'
    r = check_kernel(one(tmp_path, FTZ + k.format(fn="flushing", extra=flush)), _case("subnormals"))
    assert not r.findings, [f.message for f in r.findings]
    # a kernel that keeps subnormals (reference-exact) still passes under the flush contract
    r = check_kernel(one(tmp_path, FTZ + k.format(fn="keeping", extra=flush)), _case("subnormals"))
    assert not r.findings, [f.message for f in r.findings]
    # and the contract does not hide a wrong kernel, on subnormals or ordinary rows
    for case in ("subnormals", "normal_small"):
        r = check_kernel(one(tmp_path, FTZ + k.format(fn="off", extra=flush)), _case(case))
        assert "value" in {f.check for f in r.findings}, case


def test_flush_and_signed_zero():
    a = np.array([1e-39, -1e-39, 1.0, -0.0, 2e-38], dtype=np.float32)
    f = contracts.flush(a)
    assert f.dtype == np.float32 and list(f[2:]) == [1.0, 0.0, np.float32(2e-38)]
    assert f[0] == 0 and not np.signbit(f[0]) and f[1] == 0 and np.signbit(f[1])


def _cuda(**kw):
    return CudaKernel(name="c", op="softmax", source="x.cu", dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch("k", (M,), (256,), ("x", "y", "M", "N"))], **kw)


@pytest.mark.parametrize("flag", ["-ftz=true", "--use_fast_math"])
def test_flush_is_inferred_from_cuda_flags_and_said(flag):
    c, notes = contracts.effective(_cuda(extra_flags=("-O3", flag)))
    assert c.subnormals == "flush"
    assert notes == [f"contract: subnormals=flush inferred from extra_flags {flag} (declare "
                     "contracts=Contracts(subnormals='preserve') if the kernel keeps subnormals)"]
    c, notes = contracts.effective(_cuda(extra_flags=(flag,), contracts=Contracts(subnormals="preserve")))
    assert c.subnormals == "preserve" and notes == []
    c, notes = contracts.effective(_cuda(extra_flags=(flag,), contracts=Contracts(nan_inputs="unsupported")))
    assert c.subnormals == "flush" and notes  # declaring another contract does not say otherwise


def test_inferred_flush_is_shown_in_the_text_report(tmp_path):
    from verifier.results.kernel import PASS, KernelReport

    spec = _cuda(extra_flags=("-ftz=true",))
    r = KernelReport(spec=spec, device="cpu")
    r.notes += contracts.declared_notes(spec)
    r.mark("f32", "build", PASS)
    text = render(Result(reports=[r], options={"verbose": False}), "text")
    assert "note: c: subnormals=flush inferred from extra_flags -ftz=true" in text


def test_bad_contract_in_a_spec_file_is_a_usage_error_naming_the_value(tmp_path, capsys):
    from verifier import cli

    p = tmp_path / "bad_spec.py"
    p.write_text("from verifier.spec import CallableKernel, Contracts, dtypes\n"
                 "KERNELS = [CallableKernel(name='k', op='softmax', fn=lambda *a: None, dtypes=[dtypes('f32')],\n"
                 "                          contracts=Contracts(subnormals='ftz'))]\n")
    assert cli.main(["check", str(p), "--device", "cpu", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "Contracts(subnormals='ftz'): 'ftz' is not a subnormals contract" in err
    assert "subnormals='preserve' or 'flush'" in err and "Traceback" not in err

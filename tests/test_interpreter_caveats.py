"""Facts about the Triton interpreter that the battery works around (verifier.battery.gate.interpreter_caveat).

If a Triton release fixes one, its test here fails: then drop the caveat so the case runs again.
"""
import os

import pytest
import torch

from verifier.launch.triton import activate, triton_mode

pytestmark = pytest.mark.interpreter


@pytest.fixture(scope="module")
def tl_kernels():
    if os.environ.get("VERIFIER_TRITON_MODE", "") == "compiled" or triton_mode() != "interpreter":
        pytest.skip("this process runs Triton compiled; the caveats concern the interpreter")
    activate("interpreter")
    import triton
    import triton.language as tl

    @triton.jit
    def load_bf16(x, y, n, BLOCK: tl.constexpr):
        o = tl.arange(0, BLOCK)
        tl.store(y + o, tl.load(x + o, mask=o < n).to(tl.float32), mask=o < n)

    return load_bf16


def test_interpreter_decodes_bf16_subnormals_wrongly(tl_kernels):
    x = torch.tensor([6.5e-39, -9.0e-39, 1.0], dtype=torch.bfloat16)
    y = torch.empty(3)
    tl_kernels[(1,)](x, y, 3, BLOCK=4)
    assert y[2].item() == 1.0  # normal values load exactly
    # the subnormals do not: the battery skips bf16 inputs holding subnormals in interpreter mode
    assert y[0].item() != x[0].float().item()


def test_caveat_applies_only_to_bf16_subnormals_in_interpreter():
    import numpy as np
    import ml_dtypes

    from verifier.battery.gate import interpreter_caveat
    from verifier.spec import TritonKernel, dtypes

    spec = TritonKernel(name="t", op="softmax", module="m.py", launcher="launch", dtypes=[dtypes("bf16")])
    sub = {"x": np.array([[6.5e-39, 1.0]], dtype=ml_dtypes.bfloat16)}
    normal = {"x": np.array([[0.5, 1.0]], dtype=ml_dtypes.bfloat16)}
    assert interpreter_caveat(spec, dtypes("bf16"), sub, "cpu")
    assert interpreter_caveat(spec, dtypes("bf16"), normal, "cpu") is None
    assert interpreter_caveat(spec, dtypes("bf16"), sub, "cuda") is None


# ---- gaps seen after a run (verifier.battery.gate.after_run): a note and a skipped cell, never a finding ----------
GAPS_MODULE = '''
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

cast = tl.cast  # an alias the interpreter does not patch


@triton.jit
def _rms(x_ptr, w_ptr, y_ptr, N, sx, sy, eps, BLOCK: tl.constexpr, GAP: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # int32 * the stride wraps past 2^31 elements: large_index_2pow31 finds it
    o = tl.arange(0, BLOCK)
    m = o < N
    x = tl.load(x_ptr + row * sx + o, mask=m, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + o, mask=m, other=0.0)
    if GAP == 1:
        e = eps.to(tl.float32)  # a Python float in the interpreter
    else:
        e = eps
    ms = tl.sum(x * x, 0) / N + e
    if GAP == 2:
        r = libdevice.rhypot(tl.sqrt(ms), 0.0)  # an empty stub in the interpreter (not in the runner's numpy table)
    elif GAP == 6:
        r = libdevice.rsqrt(ms)  # run in numpy by the runner (verifier.launch.libdevice)
    else:
        r = 1.0 / tl.sqrt(ms)
    if GAP == 3:
        y = cast(x, tl.float32) * r * w.to(tl.float32)
    elif GAP == 4:
        y = (x * r).to(tl.bfloat16) * w  # bf16 arithmetic: done on raw bits in the interpreter
    elif GAP == 5:
        y = (x * r).to(tl.bfloat16).to(tl.float32) * w.to(tl.float32)  # rounds twice (Llama's RMSNorm)
    else:
        y = x * r * w.to(tl.float32)
    tl.store(y_ptr + row * sy + o, y.to(y_ptr.dtype.element_ty), mask=m)


def _launch(gap):
    def launch(inputs, outputs, params, dt):
        x = inputs["x"]
        M, N = x.shape
        _rms[(M,)](x, inputs["w"], outputs["y"], N, x.stride(0), outputs["y"].stride(0), float(params["eps"]), BLOCK=triton.next_power_of_2(N), GAP=gap)
    return launch


plain, float_arg, libdevice_stub, alias, bf16_math, twice, libdevice_rsqrt = (_launch(g) for g in range(7))
'''


def _gap_spec(tmp_path, launcher, dt):
    from verifier.spec import TritonKernel, dtypes

    path = tmp_path / "gaps.py"
    path.write_text(GAPS_MODULE)
    return TritonKernel(name=f"gap-{launcher}", op="rmsnorm", module=str(path), launcher=launcher,
                        dtypes=[dtypes(dt)], supports=lambda M, N, d: None if N <= 4096 else "N > 4096")


@pytest.mark.parametrize("launcher, dt, words", [
    ("float_arg", "f32", "Python float argument"),
    ("libdevice_stub", "f32", "libdevice functions"),
    ("bf16_math", "bf16", "computes in bfloat16 (multiply)"),
])
def test_an_interpreter_gap_is_a_caveat_not_a_finding(tl_kernels, tmp_path, launcher, dt, words):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    report = check_kernel(_gap_spec(tmp_path, launcher, dt), Options(level="quick", device="cpu"))
    assert report.findings == [] and report.error is None, (report.findings, report.error)
    value = report.cells[(dt, "value")]
    assert value.skipped and "interpreter gap" in value.reason and words in value.reason, value
    assert any(words in str(n) for n in report.notes)
    assert report.cells[(dt, "refusal")].status == "pass"  # what ran is still checked: refusals need no values


def test_the_same_kernel_without_the_gap_is_judged(tl_kernels, tmp_path):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    # a module-level alias of a builtin (cast = tl.cast, as Unsloth's triton_cast) is resolved at call time in the
    # interpreter (verifier.launch.interpreter.resolve_builtin_aliases): judged like the plain kernel
    # and libdevice.rsqrt runs in numpy there (libdevice_in_numpy)
    for launcher, dt in (("plain", "f32"), ("plain", "bf16"), ("alias", "f32"), ("libdevice_rsqrt", "f32")):
        report = check_kernel(_gap_spec(tmp_path, launcher, dt), Options(level="quick", device="cpu"))
        assert report.verdict == "pass" and not report.findings, report.findings
        assert not any("interpreter gap" in str(n) for n in report.notes)


def test_a_python_exception_in_the_launcher_is_not_an_interpreter_gap(tl_kernels):
    """Only exceptions the interpreter raised while running a kernel (InterpreterError) are gaps."""
    from verifier.battery.gate import after_run
    from verifier.launch.harness import KernelFault
    from verifier.spec import TritonKernel, dtypes

    spec = TritonKernel(name="t", op="rmsnorm", module="m.py", launcher="launch", dtypes=[dtypes("f32")])
    try:
        (1.0).to  # noqa: B018 - the launcher's own AttributeError, outside any kernel
    except AttributeError as e:
        assert after_run(spec, dtypes("f32"), "c", "cpu", fault=KernelFault(e)) is None
    assert after_run(spec, dtypes("f32"), "c", "cpu", bf16_ops={"add"}) is not None
    assert after_run(spec, dtypes("f32"), "c", "cuda", bf16_ops={"add"}) is None  # compiled: nothing to excuse


def test_interpreter_still_does_bf16_arithmetic_on_raw_bits(tl_kernels):
    """Pins the fact behind the bf16 caveat (verifier.launch.interpreter)."""
    import triton
    import triton.language as tl

    @triton.jit
    def add(x, y):
        o = tl.arange(0, 4)
        v = tl.load(x + o)
        tl.store(y + o, v + v)

    x = torch.tensor([1.0, 2.0, 3.0, -1.5], dtype=torch.bfloat16)
    y = torch.empty_like(x)
    add[(1,)](x, y)
    assert y[0].item() != 2.0


def test_interpreter_still_rounds_fp32_to_bf16_toward_zero(tl_kernels):
    """Pins the fact behind the rounding replay (verifier.launch.interpreter.faithful_rounding)."""
    import triton
    import triton.language as tl

    from verifier.launch.interpreter import faithful_rounding

    @triton.jit
    def down(x, y):
        o = tl.arange(0, 4)
        tl.store(y + o, tl.load(x + o).to(tl.bfloat16))

    x = torch.tensor([1.0 + 2**-8 + 2**-12, -1.0 - 2**-8 - 2**-12, 1 / 3, 1.0], dtype=torch.float32)
    y = torch.empty(4, dtype=torch.bfloat16)
    down[(1,)](x, y)
    assert y[0].item() == 1.0 and y[1].item() == -1.0  # toward zero: round-to-nearest gives 1 + 2**-7
    with faithful_rounding():
        down[(1,)](x, y)
    assert torch.equal(y, x.to(torch.bfloat16))  # torch rounds to nearest even, as compiled Triton does


def test_a_kernel_rounding_twice_is_judged_as_compiled_triton_rounds(tl_kernels, tmp_path):
    """Rounding x·rstd to bf16 before the weight (declared base_ulps 2): the interpreter's truncations would put
    it 3 ULPs off; replayed with round-to-nearest it passes, so those cases are caveats, never findings."""
    from dataclasses import replace

    from verifier.battery import check_kernel
    from verifier.results.options import Options

    spec = replace(_gap_spec(tmp_path, "twice", "bf16"), tolerance={"base_ulps": 2})
    report = check_kernel(spec, Options(level="ci", device="cpu"))
    assert not report.findings and report.error is None, [f.message for f in report.findings][:3]
    assert report.cells[("bf16", "value")].status in ("pass", "skipped")


_HELPER_LOOP = """
import triton
import triton.language as tl


@triton.jit
def _scaled_max(v, s):
    return tl.max(v * s, axis=0)


@triton.jit
def helper_loop(x, y, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    v = tl.load(x + o)
    acc = tl.sum(v, axis=0)
    for i in range(8):
        acc += _scaled_max(v, i * 0.5) + tl.sum(tl.exp(v - i), axis=0)
    tl.store(y + o, v * acc)
"""


def test_device_function_calls_leave_out_only_a_repeated_patch(tl_kernels, tmp_path, monkeypatch):
    """verifier.launch.interpreter._skip_repatching: a kernel's call of a @triton.jit helper does not patch
    triton.language again inside a grid run that already did; the results are bit for bit Triton's own. If a
    Triton release changes InterpretedFunction.__call__, the fast path is not installed and this fails: read the
    new code, then adapt the check of its source."""
    import importlib.util

    import triton.runtime.interpreter as interp

    from verifier.launch.interpreter import TRITON_CALLS, watch

    with watch():
        pass
    assert TRITON_CALLS and interp.InterpretedFunction.__call__ is not TRITON_CALLS["device"]
    (tmp_path / "helper_loop.py").write_text(_HELPER_LOOP)
    imp = importlib.util.spec_from_file_location("verifier_test_helper_loop", tmp_path / "helper_loop.py")
    mod = importlib.util.module_from_spec(imp)
    monkeypatch.setitem(__import__("sys").modules, imp.name, mod)
    imp.loader.exec_module(mod)

    patches = []
    real = interp._patch_lang
    monkeypatch.setattr(interp, "_patch_lang", lambda fn: patches.append(fn) or real(fn))
    x = torch.randn(16, dtype=torch.float32)
    fast, own = torch.empty_like(x), torch.empty_like(x)
    mod.helper_loop[(2,)](x, fast, BLOCK=16)
    fast_patches, patches[:] = len(patches), []
    monkeypatch.setattr(interp.InterpretedFunction, "__call__", TRITON_CALLS["device"])
    monkeypatch.setattr(interp.GridExecutor, "__call__", TRITON_CALLS["grid"])
    mod.helper_loop[(2,)](x, own, BLOCK=16)
    assert torch.equal(fast.view(torch.int32), own.view(torch.int32))
    # Triton's own path patches once a grid run and again at each helper call (tl.sum and tl.max are helpers too)
    assert len(patches) >= 2 * 18 and fast_patches <= 2, (fast_patches, len(patches))


# ---- Python `and` / `or` on block tensors (verifier.launch.triton_boolops): compiled Triton makes them
# element-wise, Triton's interpreter runs them as Python (issue #35 item 12); the verifier's rewrite runs them as
# compiled Triton, and where it cannot, the scan's finding is an interpreter gap --------------------------------------
BOTH_SOURCE = """
@triton.jit
def both(y, n, m, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(y + o, ((o < n) and (o < m)).to(tl.int32))
    tl.store(y + BLOCK + o, ((o < n) or (o < m)).to(tl.int32))
    tl.store(y + 2 * BLOCK + o, (not (o < n)).to(tl.int32))
"""


def _both(tmp_path, name):
    import importlib.util

    path = tmp_path / f"{name}.py"  # a file of its own: the interpreter rewrites a function from its source
    path.write_text("import triton\nimport triton.language as tl\n" + BOTH_SOURCE)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.both


def test_interpreter_still_runs_python_and_on_tensors_as_python(tl_kernels, tmp_path, monkeypatch):
    """Pins the fact behind the rewrite (compiled_boolops): Triton's own interpreter runs `a and b` as Python (b),
    `a or b` as a, `not block` as one Python bool. A release that fixes it fails here: the rewrite can go."""
    import triton.runtime.interpreter as interp

    from verifier.launch.triton_boolops import rewrites_boolops

    assert rewrites_boolops()  # installed when the process committed to the interpreter
    monkeypatch.setattr(interp.FunctionRewriter, "ast_transformer", interp.ASTTransformer())  # Triton's own
    assert not rewrites_boolops()
    y = torch.zeros(24, dtype=torch.int32)
    with pytest.raises(interp.InterpreterError, match="'bool' object has no attribute 'to'"):
        _both(tmp_path, "own")[(1,)](y, 2, 6, BLOCK=8)  # `not block`: one Python bool
    assert y[:8].tolist() == [1] * 6 + [0] * 2  # o < 6: compiled Triton gives o < 2
    assert y[8:16].tolist() == [1] * 2 + [0] * 6  # o < 2: compiled Triton gives o < 6


def test_the_rewrite_runs_and_or_not_as_compiled_triton(tl_kernels, tmp_path):
    y = torch.zeros(24, dtype=torch.int32)
    _both(tmp_path, "rewritten")[(1,)](y, 2, 6, BLOCK=8)
    assert y.tolist() == [1] * 2 + [0] * 6 + [1] * 6 + [0] * 2 + [0] * 2 + [1] * 6


def test_the_rewrite_follows_compiled_triton_on_python_operands(tl_kernels):
    """_apply_boolean_values: a deciding Python operand is the result and the rest never runs; the others are
    dropped; tensors combine element-wise; Python operands alone give Python's answer."""
    import triton.language as tl

    from verifier.launch.triton_boolops import _boolop, _not

    class T(tl.tensor):  # stands for a block: only its combination is asked of it
        def __init__(self, name):
            self.name = name

        def logical_and(self, other):
            return T(f"({self.name}&{other.name})")

        def logical_or(self, other):
            return T(f"({self.name}|{other.name})")

        def __not__(self):
            return T(f"~{self.name}")

    boolop, not_ = _boolop(tl.tensor), _not(tl.tensor)

    def never():
        raise AssertionError("evaluated past a deciding Python operand")

    a, b = T("a"), T("b")
    assert boolop("logical_and", a, lambda: 0, never) == 0  # compiled: 0 (after a ran)
    assert boolop("logical_or", a, lambda: 2, never) == 2
    assert boolop("logical_and", a, lambda: True).name == "a"  # Python: True
    assert boolop("logical_and", True, lambda: a, lambda: 1, lambda: b).name == "(a&b)"
    assert boolop("logical_or", a, lambda: False, lambda: b, lambda: T("c")).name == "(a|(b|c))"
    assert boolop("logical_and", 1, lambda: 2) == 2 and boolop("logical_or", 0, lambda: "") == ""
    assert not_(a).name == "~a" and not_(0) is True and not_([1]) is False


BOOLOPS_MODULE = '''
import triton
import triton.language as tl


@triton.jit
def _rowsum(x_ptr, y_ptr, N, sx, BLOCK: tl.constexpr, PY_AND: tl.constexpr, HAS_X: tl.constexpr):
    row = tl.program_id(0)
    o = tl.arange(0, BLOCK)
    if PY_AND and HAS_X:  # constexprs: the same in both
        m = (o < N) and (o < BLOCK)  # Triton's interpreter: o < BLOCK, past the row
    else:
        m = (o < N) & (o < BLOCK)
    x = tl.load(x_ptr + row * sx + o, mask=m, other=0.0).to(tl.float32)
    s = tl.sum(x, 0)
    if row >= 0 and N > 0:  # scalars: the same in both
        tl.store(y_ptr + row, s.to(y_ptr.dtype.element_ty))


def _launch(py_and):
    def launch(inputs, outputs, params, dt):
        x = inputs["x"]
        M, N = x.shape
        _rowsum[(M,)](x, outputs["y"], N, x.stride(0), BLOCK=triton.next_power_of_2(N), PY_AND=py_and, HAS_X=True)
    return launch


py_and, bitwise = _launch(True), _launch(False)
'''


def _boolops_spec(tmp_path, launcher, source=BOOLOPS_MODULE):
    from verifier.spec import TritonKernel, dtypes

    path = tmp_path / "rowsum.py"
    path.write_text(source)
    return TritonKernel(name=f"rowsum-{launcher}", op="reduce_sum", module=str(path), launcher=launcher,
                        dtypes=[dtypes("f32")], supports=lambda M, N, d: None if N <= 4096 else "N > 4096")


def test_the_scan_finds_and_on_blocks_only(tmp_path):
    from verifier.launch.triton_boolops import tensor_boolops

    path = tmp_path / "rowsum.py"
    path.write_text(BOOLOPS_MODULE)
    (hit,) = tensor_boolops(path)  # not `PY_AND and HAS_X` (constexprs), not `row >= 0 and N > 0` (scalars)
    assert hit.startswith("`o < N and o < BLOCK` (and) in _rowsum, rowsum.py:11"), hit
    assert tensor_boolops(path, rewritten=True) == ()  # the rewrite runs it as compiled Triton
    # a walrus past the first operand is left to Python (a lambda would bind it): still a gap once rewritten
    path.write_text(BOOLOPS_MODULE.replace("(o < N) and (o < BLOCK)", "(o < N) and (k := o < BLOCK)"))
    (hit,) = tensor_boolops(path, rewritten=True)
    assert hit.startswith("`o < N and (k := (o < BLOCK))` (and) in _rowsum"), hit
    path.write_text(BOOLOPS_MODULE.replace("(o < N) and (o < BLOCK)", "(o < N) & (o < BLOCK)"))
    assert tensor_boolops(path) == ()


def test_python_and_on_blocks_is_judged_once_rewritten(tl_kernels, tmp_path):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    report = check_kernel(_boolops_spec(tmp_path, "py_and"), Options(level="quick", device="cpu"))
    assert report.verdict == "pass" and not report.findings, [f.message for f in report.findings][:3]
    assert report.cells[("f32", "value")].status == "pass", report.cells[("f32", "value")]
    assert not any("interpreter gap" in str(n) for n in report.notes)


def test_python_and_on_blocks_is_an_interpreter_gap_where_not_rewritten(tl_kernels, tmp_path, monkeypatch):
    import verifier.launch.triton_boolops as boolops
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    # an interpreter the rewrite cannot be installed over (the gate asks rewrites_boolops): the scan's finding
    # closes the cases, before the run, as for any interpreter gap
    monkeypatch.setattr(boolops, "rewrites_boolops", lambda: False)
    report = check_kernel(_boolops_spec(tmp_path, "py_and"), Options(level="quick", device="cpu"))
    assert report.findings == [] and report.error is None, ([f.message for f in report.findings][:3], report.error)
    for check in ("value", "determinism"):
        cell = report.cells[("f32", check)]
        assert cell.skipped and "interpreter gap" in cell.reason and "Python `and` / `or`" in cell.reason, cell
    assert any("rowsum.py:11" in str(n) for n in report.notes)


def test_the_same_kernel_with_a_bitwise_and_is_judged(tl_kernels, tmp_path):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    # the scan reads the module, not one launcher's path through it: the twin's module has no `and` on blocks
    twin = BOOLOPS_MODULE.replace("(o < N) and (o < BLOCK)", "(o < N) & (o < BLOCK)")
    report = check_kernel(_boolops_spec(tmp_path, "bitwise", twin), Options(level="quick", device="cpu"))
    assert report.verdict == "pass" and not report.findings, [f.message for f in report.findings][:3]
    assert not any("interpreter gap" in str(n) for n in report.notes)


def test_interpreter_still_converts_to_fp8_wrongly(tl_kernels):
    """Pins the fact behind the fp8 replay (verifier.launch.interpreter.faithful_rounding): Triton's interpreter
    gets even in-range float32 -> e4m3fn conversions wrong; replayed, they are torch's (nearest even) and saturate."""
    import triton
    import triton.language as tl

    from verifier.launch.interpreter import faithful_rounding

    @triton.jit
    def to_fp8(x, y, z):
        o = tl.arange(0, 8)
        v = tl.load(x + o)
        tl.store(y + o, v.to(tl.float8e4nv))
        tl.store(z + o, v.to(tl.float8e5))

    x = torch.tensor([7.98, 0.3, -2.5, 3.25, 1e-3, 500.0, float("nan"), -1e6], dtype=torch.float32)
    y, z = torch.empty(8, dtype=torch.float8_e4m3fn), torch.empty(8, dtype=torch.float8_e5m2)
    to_fp8[(1,)](x, y, z)
    assert y[0].float().item() == 4.0  # nearest even is 8.0
    with faithful_rounding():
        to_fp8[(1,)](x, y, z)
    finite = slice(0, 6)
    assert torch.equal(y[finite].float(), x[finite].clamp(-448, 448).to(torch.float8_e4m3fn).float())
    assert torch.equal(z[:6].float(), x[:6].to(torch.float8_e5m2).float())
    assert y[6].float().isnan() and y[7].float().item() == -448.0 and z[7].float().item() == -57344.0


def test_a_user_fp8_cast_is_judged_as_compiled_triton_converts():
    """A correct quantizer using ``.to(tl.float8e4nv)`` gets no finding on CPU (its failing cases replayed with the
    compiled conversion pass: caveats, said so); a truncating one still fails."""
    from verifier.declare.registry import load_spec_file
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    if os.environ.get("VERIFIER_TRITON_MODE", "") == "compiled" or triton_mode() != "interpreter":
        pytest.skip("this process runs Triton compiled; the caveat concerns the interpreter")
    from pathlib import Path

    ok, trunc = load_spec_file(str(Path(__file__).parent / "data" / "fp8_cast" / "fp8_cast_spec.py"))
    good = check_kernel(ok, Options(level="quick", device="cpu"))
    assert not good.findings and good.error is None, [f.message for f in good.findings][:3]
    bad = check_kernel(trunc, Options(level="quick", device="cpu"))
    assert any(f.check in ("value", "rounding") for f in bad.findings), [f.message for f in bad.findings][:3]


DTYPE_HELPER_MODULE = '''
import triton
import triton.language as tl


@triton.jit
def _lowest(dtype, ZERO: tl.constexpr):
    """The smallest value of ``dtype``, read as FlagGems' get_dtype_min reads it: ``dtype.value`` (a constexpr
    when compiled)."""
    if dtype.value.is_floating():
        if ZERO:
            value: tl.constexpr = 0.0  # the defect twin: masked columns beat an all-negative row
        else:
            value: tl.constexpr = float("-inf")
        return value
    value: tl.constexpr = -1
    return value


@triton.jit
def _argmax(x_ptr, i_ptr, N, sx, BLOCK: tl.constexpr, ZERO: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    o = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * sx + o, mask=o < N, other=_lowest(x_ptr.dtype.element_ty, ZERO))
    tl.store(i_ptr + row, tl.argmax(x, 0, tie_break_left=True).to(tl.int64))


def _launch(zero):
    def launch(inputs, outputs, params, dt):
        x = inputs["x"]
        _argmax[(x.shape[0],)](x, outputs["index"], x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]),
                               ZERO=zero)
    return launch


lowest, zero = _launch(False), _launch(True)
'''


def test_a_dtype_given_to_a_jit_helper_is_a_constexpr_as_compiled(tl_kernels, tmp_path):
    """FlagGems' reductions pass ``inp.type.element_ty`` to a @triton.jit helper reading ``dtype.value``: compiled
    Triton passes it as a constexpr; the interpreter as a bare tl.dtype (AttributeError, a crash finding on every
    input) unless verifier.launch.interpreter.dtype_value gives dtypes that ``value``. Judged: the twin whose masked
    columns load 0 fails on -inf rows."""
    from verifier.battery import check_kernel
    from verifier.declare.contracts import Contracts
    from verifier.results.options import Options
    from verifier.spec import TritonKernel, dtypes

    path = tmp_path / "argmax_helper.py"
    path.write_text(DTYPE_HELPER_MODULE)

    def spec(launcher):
        return TritonKernel(name=f"argmax-{launcher}", op="row_argmax", module=str(path), launcher=launcher,
                            dtypes=[dtypes("f32")], contracts=Contracts(nan_inputs="unsupported"),
                            supports=lambda M, N, d: None if N <= 4096 else "N > 4096")

    ok = check_kernel(spec("lowest"), Options(level="quick", device="cpu"))
    assert ok.verdict == "pass" and not ok.findings, [f.message for f in ok.findings][:3]
    assert ok.cells[("f32", "value")].status == "pass"
    bad = check_kernel(spec("zero"), Options(level="quick", device="cpu", case="argmax_neg_inf"))
    assert {f.check for f in bad.findings} == {"value"}, [(f.check, f.message) for f in bad.findings][:3]


def test_dtype_value_is_installed_only_where_a_dtype_has_none():
    """verifier.launch.interpreter.dtype_value on stand-in interpreters (any Triton, or none): installed once, over a
    dtype class without ``value``; a Triton whose dtype has one of its own keeps it."""
    import types

    from verifier.launch.interpreter import dtype_value

    class Dtype:
        pass

    interp = types.SimpleNamespace(tl=types.SimpleNamespace(dtype=Dtype))
    assert dtype_value(interp) is True
    f32 = Dtype()
    assert f32.value is f32  # as tl.constexpr(f32).value
    assert dtype_value(interp) is False  # once

    class Owned:
        value = "its own"

    assert dtype_value(types.SimpleNamespace(tl=types.SimpleNamespace(dtype=Owned))) is False
    assert Owned.value == "its own"
    assert dtype_value(types.SimpleNamespace()) is False  # no tl: nothing to patch

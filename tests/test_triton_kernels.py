"""The Triton kernels under kernels/triton, run through verifier.launch.triton in the interpreter
(CPU), against float64 torch references; and the runner's choice of compiled/interpreter mode.

Tolerances are worst-case bounds for the kernels' fp32 arithmetic (whatever reduction order),
written out per op below: error <= u_out*|y| (the final rounding) + (bound of the fp32 math).
The interpreter computes exp, division and sqrt in numpy, each within 1 ulp of fp32.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from verifier.errors import ToolMissing, Unsupported, UsageError
from verifier.declare.registry import load_spec_file
from verifier.launch import triton as runner
from verifier.spec import dtypes

if importlib.util.find_spec("triton") is None:
    pytest.skip("triton is not installed", allow_module_level=True)


@pytest.fixture(scope="module", autouse=True)
def interpreter_mode():
    """The runner, not the test command, sets TRITON_INTERPRET (before triton is imported). Done
    here rather than at import so that collecting this file (e.g. under -m 'not interpreter')
    does not commit a GPU process to the interpreter."""
    if runner._active == "compiled":  # a GPU run already compiled kernels in this process
        pytest.skip("interpreter tests need their own process: run pytest -m interpreter")
    # Any other refusal (something imported triton first) is a real defect: let it fail.
    runner.activate("interpreter")


pytestmark = pytest.mark.interpreter

REPO = Path(__file__).resolve().parents[1]
KERNELS = {k.name: k for k in load_spec_file(REPO / "kernels" / "triton" / "spec.py")}
U32 = 2.0**-24
INF = float("inf")
NAN = float("nan")
DTS = ["f32", "f16", "bf16"]


def u(dt: str) -> float:
    return {"f32": 2.0**-24, "f16": 2.0**-11, "bf16": 2.0**-8}[dt]


def out_rounding(dt: str) -> float:
    """Relative error of the final store. The interpreter (triton 3.9, interpreter.py
    _convert_float called with no rounding mode) truncates fp32 -> bf16 toward zero: up to one
    ulp (2u), where the GPU's cvt.rn rounds to nearest (u)."""
    return 2 * u(dt) if dt == "bf16" else u(dt)


def tdt(dt: str):
    return {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dt]


def subnormal_ulp(dt: str) -> float:
    """One ulp in the subnormal range: the floor of any relative bound."""
    return torch.finfo(tdt(dt)).smallest_normal * 2.0 * u(dt)


def run(name, dt, inputs, **kw):
    """Run kernel ``name`` through the runner; inputs are float64 tensors, cast to dt first."""
    spec = KERNELS[name]
    d = dtypes(dt)
    ins = {k: v.to(tdt(dt)) for k, v in inputs.items()}
    outs = {"y": torch.full_like(ins["x"], NAN)}  # poisoned: an unwritten element fails
    if "residual" in ins:
        outs["residual"] = ins["residual"]
    if kw:  # launcher options (the tile size) are not spec params: call the loaded launcher
        mod = runner.load_module(spec, "interpreter")
        with np.errstate(all="ignore"):  # as the runner: inf/NaN inputs are the point
            getattr(mod, spec.launcher)(ins, outs, {**spec.op_params()}, d, **kw)
    else:
        runner.run_triton(spec, ins, outs, {}, d, "cpu", mode="interpreter")
    return ins, outs


# ---- references (float64, from the values the kernel actually read) and bounds ----

def softmax_ref(x):
    return torch.softmax(x.double(), -1)


def softmax_rtol(x, dt):
    # d = x - max rounds (rel. u|d|, amplified by exp to u|d|), exp 1 ulp: (D + 2)u per term;
    # the sum adds (N - 1)u; the division u. y = e/s: 2(D + 2) + (N - 1) + 1.
    xd = x.double()
    finite = torch.isfinite(xd)
    D = (xd.amax(-1, keepdim=True) - xd).where(finite, 0.0).abs().max().item() if finite.any() else 0.0
    N = x.shape[-1]
    return out_rounding(dt) + (2 * (D + 2) + N) * U32


def rms_ref(x, w, eps):
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w.double()


def rms_rtol(N, dt, extra=0):
    # sum of squares: u per square + (N - 1)u; /N and +eps: 2u; 1/sqrt halves that and adds 2u;
    # x*rstd*w: 2u.
    return out_rounding(dt) + ((N + 2) / 2 + 4 + extra) * U32


def assert_matches(actual, ref, rtol, atol=0.0, dt="f32"):
    torch.testing.assert_close(actual.double(), ref, rtol=rtol, atol=max(atol, subnormal_ulp(dt)), equal_nan=True)


def rows(M, N, seed):
    return torch.randn(M, N, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# ---- softmax (one block and online) ----

SOFTMAX = [("triton-softmax", {}), ("triton-online-softmax", {}), ("triton-online-softmax", {"block": 64})]


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("name,kw", SOFTMAX, ids=["one-block", "online", "online-tiled"])
@pytest.mark.parametrize("N", [1, 7, 33, 300, 1000])
def test_softmax_random(name, kw, dt, N):
    x = rows(3, N, seed=N) * 3
    ins, outs = run(name, dt, {"x": x}, **kw)
    assert_matches(outs["y"], softmax_ref(ins["x"]), softmax_rtol(ins["x"], dt), dt=dt)


def special_rows(N):
    """Rows that exercise masking semantics; with 64-column tiles and N=300 the -inf prefix covers
    whole tiles, the NaN sits in a late tile and the max grows from tile to tile."""
    x = rows(6, N, seed=1)
    x[0, : N // 2] = -INF  # partial mask: zeros there, softmax of the rest
    x[1, :] = -INF  # fully masked: NaN (as torch)
    x[2, N - 3] = NAN  # NaN propagates to the whole row
    x[3, :] = torch.linspace(-20, 20, N, dtype=torch.float64)  # running max grows every tile: rescale
    x[4, :] = -INF
    x[4, N - 1] = 0.5  # one finite value after all-(-inf) tiles: exactly 1
    x[5, 0] = INF  # +inf: NaN as torch (inf - inf)
    return x


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("name,kw", SOFTMAX, ids=["one-block", "online", "online-tiled"])
def test_softmax_special_values(name, kw, dt):
    x = special_rows(300)
    ins, outs = run(name, dt, {"x": x}, **kw)
    y, ref = outs["y"], softmax_ref(ins["x"])
    assert torch.equal(ref[1].isnan(), torch.ones(300, dtype=torch.bool))  # the semantics we hold to
    assert y[0, :150].eq(0).all() and y[4, -1].item() == 1.0
    finite = ins["x"].clone()
    finite[~torch.isfinite(finite)] = 0  # D from the finite values only
    assert_matches(y, ref, softmax_rtol(finite, dt), dt=dt)


def test_online_softmax_refuses_a_tile_that_is_not_a_power_of_two():
    mod = runner.load_module(KERNELS["triton-online-softmax"], "interpreter")
    x = torch.zeros(1, 300)
    with pytest.raises(ValueError, match="power of two"):
        mod.launch({"x": x}, {"y": torch.empty_like(x)}, {}, dtypes("f32"), block=48)


def test_one_block_softmax_refuses_long_rows_before_launch():
    spec = KERNELS["triton-softmax"]
    x = torch.zeros(1, 32769)
    y = torch.full_like(x, 7.0)
    with pytest.raises(Unsupported, match="triton-online-softmax"):
        runner.run_triton(spec, {"x": x}, {"y": y}, {}, dtypes("f32"), "cpu", mode="interpreter")
    assert y.eq(7.0).all()  # nothing launched
    assert spec.check_supported(1, 32768, dtypes("f32")) is None
    assert KERNELS["triton-online-softmax"].check_supported(1, 152064, dtypes("bf16")) is None


# ---- RMSNorm, LayerNorm, fused add + RMSNorm ----

def weights(N, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(N, generator=g, dtype=torch.float64) + 0.5, torch.randn(N, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("N", [1, 7, 33, 1000])
def test_rmsnorm(dt, N):
    w, _ = weights(N, N)
    x = rows(4, N, seed=N)
    x[3] *= 1e-4  # small rows: eps inside the root matters
    ins, outs = run("triton-rmsnorm", dt, {"x": x, "w": w})
    eps = KERNELS["triton-rmsnorm"].op_params()["eps"]
    assert_matches(outs["y"], rms_ref(ins["x"], ins["w"], eps), rms_rtol(N, dt), dt=dt)


def ln_ref_and_atol(x, w, b, eps):
    """Reference and absolute bound. The mean carries <= (N + 1)u * mean|x| (sum and division);
    it shifts every centred value, so y_i - b_i carries |w_i| rstd (dmean + K u |xc_i|) with
    K = (N + 4)/2 + 6 (variance sum and division, 1/sqrt, the subtraction and two products);
    adding b rounds once more (the rtol term)."""
    x, w, b = x.double(), w.double(), b.double()
    N = x.shape[-1]
    xc = x - x.mean(-1, keepdim=True)
    rstd = torch.rsqrt(xc.pow(2).mean(-1, keepdim=True) + eps)
    dmean = (N + 1) * U32 * x.abs().mean(-1, keepdim=True)
    K = (N + 4) / 2 + 6
    atol = (w.abs() * rstd * (dmean + K * U32 * xc.abs())).max().item()
    return xc * rstd * w + b, atol


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("N", [1, 7, 33, 1000])
def test_layernorm(dt, N):
    w, b = weights(N, N)
    x = rows(4, N, seed=N)
    x[2] = x[2] + 1000.0  # mean >> std: a one-pass E[x^2] - E[x]^2 kernel loses the variance here
    x[3] = x[3] * 1e-3  # var ~ eps
    ins, outs = run("triton-layernorm", dt, {"x": x, "w": w, "b": b})
    eps = KERNELS["triton-layernorm"].op_params()["eps"]
    ref, atol = ln_ref_and_atol(ins["x"], ins["w"], ins["b"], eps)
    assert_matches(outs["y"], ref, out_rounding(dt) + U32, atol=atol, dt=dt)


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("N", [1, 7, 33, 1000])
def test_fused_add_rmsnorm_updates_residual_in_place(dt, N):
    w, _ = weights(N, N)
    x, r = rows(3, N, seed=N), rows(3, N, seed=N + 1)
    ins, outs = run("triton-fused-add-rmsnorm", dt, {"x": x, "residual": r, "w": w})
    assert outs["residual"] is ins["residual"]
    x64 = ins["x"].double()
    r64 = r.to(tdt(dt)).double()  # the residual before the update
    s = x64 + r64
    # residual: the fp32 sum (u) rounded to the io dtype
    assert_matches(ins["residual"], s, out_rounding(dt) + U32, dt=dt)
    # y from the fp32 sum (one more rounding than rmsnorm on exact inputs)
    eps = KERNELS["triton-fused-add-rmsnorm"].op_params()["eps"]
    assert_matches(outs["y"], rms_ref(s, ins["w"], eps), rms_rtol(N, dt, extra=2), dt=dt)


def test_fused_add_rmsnorm_refuses_a_copied_residual():
    spec = KERNELS["triton-fused-add-rmsnorm"]
    x = torch.zeros(2, 8)
    ins = {"x": x, "residual": torch.zeros(2, 8), "w": torch.ones(8)}
    outs = {"y": torch.empty(2, 8), "residual": torch.zeros(2, 8)}
    with pytest.raises(UsageError, match="in place"):
        runner.run_triton(spec, ins, outs, {}, dtypes("f32"), "cpu", mode="interpreter")


@pytest.mark.parametrize("name", ["triton-rmsnorm", "triton-layernorm", "triton-fused-add-rmsnorm"])
def test_norms_propagate_nan_to_their_row(name):
    N = 33
    w, b = weights(N, 0)
    x = rows(2, N, seed=0)
    x[0, 5] = NAN
    inputs = {"x": x, "w": w}
    if name == "triton-layernorm":
        inputs["b"] = b
    if name == "triton-fused-add-rmsnorm":
        inputs["residual"] = torch.zeros(2, N, dtype=torch.float64)
    _, outs = run(name, "f32", inputs)
    assert outs["y"][0].isnan().all() and not outs["y"][1].isnan().any()


# ---- the runner ----

def test_runner_checks_tensors_and_mode():
    spec = KERNELS["triton-rmsnorm"]
    x = torch.zeros(2, 8, dtype=torch.float16)
    with pytest.raises(UsageError, match="dtype torch.float16, declared float32"):
        runner.run_triton(spec, {"x": x, "w": torch.ones(8)}, {"y": torch.empty(2, 8)}, {}, dtypes("f32"), "cpu")
    with pytest.raises(UsageError, match=r"tensors \['w'\] not given"):
        runner.run_triton(spec, {"x": x.float()}, {"y": torch.empty(2, 8)}, {}, dtypes("f32"), "cpu")
    assert runner.triton_mode() == "interpreter"
    assert os.environ["TRITON_INTERPRET"] == "1"  # set by the runner, not by the test command
    with pytest.raises(UsageError, match="already set up in interpreter mode"):
        runner.triton_mode("compiled")
    with pytest.raises(UsageError, match="unknown Triton mode"):
        runner.triton_mode("jit")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only refusal")
def test_compiled_resources_needs_a_gpu():
    with pytest.raises(ToolMissing, match="no GPU"):
        runner.compiled_resources(KERNELS["triton-softmax"], 4, 1000, dtypes("f32"))


def _python(code: str, tmp_path: Path, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "VERIFIER_TRITON_MODE")}
    env.update(env_extra or {})
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)


def test_mode_is_fixed_by_the_first_import_of_triton(tmp_path):
    """Design: triton decorates tl.sum & co. when it is imported, so a process that imported triton
    with TRITON_INTERPRET unset cannot run the interpreter: the runner refuses with a fix. Where the
    runner is the first to import triton, interpreter mode works and a later switch is refused."""
    p = _python(f"""
        import triton, torch
        from verifier.launch import triton as runner
        from verifier.errors import UsageError
        try:
            runner.activate("interpreter")
        except UsageError as e:
            print("REFUSED", e)
    """, tmp_path)
    assert p.returncode == 0, p.stderr
    assert "REFUSED asked for Triton interpreter mode, but triton was already imported in compiled mode" in p.stdout
    assert f"fix: set {runner.MODE_ENV}=interpreter" in p.stdout

    p = _python(f"""
        import sys, torch
        from verifier.declare.registry import load_spec_file
        from verifier.launch import triton as runner
        from verifier.spec import dtypes
        from verifier.errors import UsageError
        assert "triton" not in sys.modules
        spec = {{k.name: k for k in load_spec_file({str(REPO / 'kernels/triton/spec.py')!r})}}["triton-softmax"]
        x = torch.tensor([[0.0, 1.0, float("-inf")]])
        y = torch.empty_like(x)
        runner.run_triton(spec, {{"x": x}}, {{"y": y}}, {{}}, dtypes("f32"), "cpu", mode="interpreter")
        torch.testing.assert_close(y, torch.softmax(x, -1))
        try:
            runner.triton_mode("compiled")
        except UsageError as e:
            print("REFUSED", e.message)
    """, tmp_path)
    assert p.returncode == 0, p.stderr
    assert "REFUSED Triton is already set up in interpreter mode" in p.stdout


def test_mode_conflicts_are_refused_with_a_fix(tmp_path):
    """An explicit knobs.runtime.interpret overriding the environment, and a helper module decorated
    before the runner chose the mode, are both refused before any launch."""
    (tmp_path / "helper.py").write_text(textwrap.dedent("""
        import triton
        import triton.language as tl

        @triton.jit
        def twice(v):
            return v * 2
    """))
    (tmp_path / "kern.py").write_text(textwrap.dedent("""
        import triton
        import triton.language as tl
        from helper import twice

        @triton.jit
        def k(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK: tl.constexpr):
            pass

        def launch(inputs, outputs, params, dtypes):
            raise AssertionError("must not launch")
    """))
    p = _python(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import triton  # interpreter mode: TRITON_INTERPRET=1 in this child's environment
        triton.knobs.runtime.interpret = False
        import helper  # decorated now, compiled
        from verifier.launch import triton as runner
        from verifier.spec import TritonKernel, dtypes
        from verifier.errors import UsageError
        spec = TritonKernel(name="k", op="softmax", module={str(tmp_path / 'kern.py')!r}, launcher="launch",
                            dtypes=[dtypes("f32")])
        for attempt in (1, 2):
            try:
                runner.load_module(spec, "interpreter")
            except UsageError as e:
                print("REFUSED", e)
            del triton.knobs.runtime.interpret  # back to the environment for the second attempt
    """, tmp_path, {"TRITON_INTERPRET": "1"})
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "REFUSED asked for Triton interpreter mode, but triton.knobs.runtime.interpret was set" in out
    assert "twice (from module helper) were decorated for compiled mode" in out
    assert out.count("fix:") == 2


def test_capture_finds_compiled_kernels_through_the_jit_and_the_launch_hook(monkeypatch):
    """verifier.launch.triton_capture (issue #23): a launcher that returns its outputs, not the compiled kernel —
    the kernels are found through JITFunction.run and, for a compiled kernel launched directly, the launch hook."""
    import gc

    from triton import knobs
    from triton.compiler.compiler import CompiledKernel
    from triton.runtime.jit import JITFunction

    from verifier.launch.triton_capture import launches

    a, b = object.__new__(CompiledKernel), object.__new__(CompiledKernel)
    for k, fn in ((a, 11), (b, 22)):
        k.function, k.module = fn, None  # no module loaded: nothing to unload when collected
    monkeypatch.setattr(JITFunction, "run", lambda self, *args, grid, warmup, **kw: a)
    before, hooks = JITFunction.run, list(knobs.runtime.launch_enter_hook.calls)
    with launches() as found:
        JITFunction.run(None, grid=(1,), warmup=False)  # kernel[grid](...) through the JIT
        JITFunction.run(None, grid=(1,), warmup=True)  # a warmup compiles, launches nothing
        knobs.runtime.launch_enter_hook({"function": 22})  # compiled[grid](...): only the hook sees it
    assert found == [a, b] and found.seen == 2  # the warmup is no launch
    assert JITFunction.run is before and knobs.runtime.launch_enter_hook.calls == hooks  # all restored
    with launches(resolve=False) as counted:  # launched at all? (every run: a launcher computing with torch fails)
        JITFunction.run(None, grid=(1,), warmup=False)
    assert counted == [] and counted.seen == 1
    del a, b
    gc.collect()


@pytest.mark.parametrize("name", ["triton-softmax", "triton-rmsnorm", "triton-layernorm", "triton-fused-add-rmsnorm"])
def test_one_block_kernels_refuse_the_rows_that_would_spill_and_forbid_local_memory(name):
    # the limits are where the row stops fitting in registers on sm_90 (benchmarks/triton_spills.py): past them the
    # kernel would spill, so it refuses, and any local memory at a supported N is a resources error, not a warning
    spec = KERNELS[name]
    limit = runner.load_module(spec, "interpreter").MAX_N
    assert limit == {"triton-softmax": 32768, "triton-layernorm": 8192}.get(name, 16384)
    for tag in ("f32", "f16", "bf16"):
        assert spec.check_supported(1, limit, dtypes(tag)) is None
        assert "register-resident one-block limit" in spec.check_supported(1, limit + 1, dtypes(tag))
    assert spec.expectations.max_spill_bytes == 0 and spec.expectations.max_stack_bytes == 0

"""The inputs real callers pass (verifier.inputs.layouts): strided rows, unaligned pointers, more than 2^31 elements,
and the log-domain rows. The CUDA path runs over the fake libcuda (tests/fake_libcuda.py), the torch path on CPU
tensors; the large case on a simulated small wrap (its row selection, device-side fills, chunked poison count and
judging of the selected rows are the same code as at 2^31)."""
from __future__ import annotations

from ctypes import c_int32, c_int64

import ml_dtypes
import numpy as np
import pytest
import torch

from fake_libcuda import Illegal, Misaligned, install
from verifier.battery import gate
from verifier.battery.values import run_case
from verifier.declare.contracts import layout_excluded
from verifier.errors import SpecError
from verifier.gpu import libcuda as cd
from verifier.inputs import catalogue as C
from verifier.inputs import large_family as F
from verifier.inputs import layouts as L
from verifier.inputs.cases import cases_for, draw, random_inputs
from verifier.judge import Criteria, judge
from verifier.launch import cuda as rc
from verifier.launch import large
from verifier.launch.harness import KernelFault, execute
from verifier.results.options import Options
from verifier.spec import CallableKernel, Contracts, CudaKernel, Launch, Stride, dtypes, max_row

F32, BF16 = dtypes("f32"), dtypes("bf16")
_IO = {"f32": np.float32, "bf16": ml_dtypes.bfloat16}
CUDA = Options(device="cuda")
CPU = Options(device="cpu")
STRIDED, UNALIGNED = L.Layout(L.STRIDED), L.Layout(L.UNALIGNED)


def _signed_wrap(o: int, wrap: int) -> int:
    """``o`` as a signed integer of a width that wraps at ``wrap`` (2^31 on a GPU, smaller here)."""
    return (o + wrap) % (2 * wrap) - wrap


def _rows(lib, a, io, use_stride=True, wrap=None, vector=False):
    """RMSNorm over (x, w, y, M, N, x stride, y stride, eps), rows at the strides (or at N), offsets wrapping at
    ``wrap``; ``vector``: 16-byte loads when N fills whole vectors, whatever the pointers' alignment."""
    x, w, y, M, N, sx, sy, eps = a
    it = np.dtype(io).itemsize
    if vector and N % (16 // it) == 0 and (x % 16 or y % 16 or w % 16):
        raise Misaligned()
    sx, sy = (sx, sy) if use_stride else (N, N)
    wv = lib.view(w, io, N).astype(np.float32)
    for r in range(M):
        ox, oy = r * sx, r * sy
        if wrap:
            ox, oy = _signed_wrap(ox, wrap), _signed_wrap(oy, wrap)
            if ox < 0 or oy < 0:
                raise Illegal(f"row {r} at a negative offset")
        xr = lib.view(x + ox * it, io, N).astype(np.float32)
        with np.errstate(over="ignore"):  # a row read from the gaps holds the dtype's max
            rstd = np.float32(1) / np.sqrt((xr * xr).mean(dtype=np.float32) + np.float32(eps))
        lib.view(y + oy * it, io, N)[:] = (xr * rstd * wv).astype(io)


def _skip_row(lib, a, io, row=60):
    """Correct, except that row ``row`` is never written."""
    keep = lib.view(a[2] + row * a[6] * np.dtype(io).itemsize, io, a[4]).copy()
    _rows(lib, a, io)
    lib.view(a[2] + row * a[6] * np.dtype(io).itemsize, io, a[4])[:] = keep


def _pointers(lib, a, io):  # cross entropy (x, labels, loss, ...): record where the tensors start
    lib.seen = a[:3]
    x, lab, loss, M, N = a[:5]
    lib.view(loss, np.float32, M)[:] = 0.0


BODIES = {"rows": _rows, "no_stride": lambda lib, a, io: _rows(lib, a, io, use_stride=False),
          "wraps": lambda lib, a, io: _rows(lib, a, io, wrap=4096),
          "vector": lambda lib, a, io: _rows(lib, a, io, vector=True), "skip_row": _skip_row, "pointers": _pointers}
KERNELS = {f"{n}_{tag}": (lambda b, io: lambda lib, a: b(lib, a, io))(b, io) for n, b in BODIES.items()
           for tag, io in _IO.items()}
ROWS = ("x", "w", "y", "M", "N", "x.stride", Stride("y", "int64"), "eps")


@pytest.fixture
def lib(monkeypatch):
    from verifier.gpu import probe

    probe.driver_device_count.cache_clear()
    fake = install(KERNELS, monkeypatch.setattr)
    yield fake
    cd._primary.cache_clear()
    probe.driver_device_count.cache_clear()  # answered by the fake (free_memory asks it): not the machine's answer
    probe.capability.cache_clear()


def _spec(name, body, args=ROWS, op="rmsnorm", dts=(F32, BF16), **kw):
    return CudaKernel(name=name, op=op, source="emulated.cu", dtypes=list(dts), **kw,
                      launches=lambda M, N, dt, p: [Launch(f"{body}_{dt.tag}", grid=(M,), block=(32,), args=args)])


def _xs(spec, dt, M=5, N=24):
    return random_inputs(spec, dt, M, N, np.random.default_rng(0))


def _reference(xs, eps):
    x = xs["x"].astype(np.float32)
    r = np.float32(1) / np.sqrt((x * x).mean(axis=1, dtype=np.float32) + np.float32(eps))
    return (x * r[:, None] * xs["w"].astype(np.float32)).astype(xs["x"].dtype)


# --- strided rows -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", [F32, BF16], ids=lambda d: d.tag)
def test_strided_rows_reach_a_cuda_kernel_with_the_stride_its_launch_names(lib, dt):
    spec = _spec("emu-rows", "rows")
    xs = _xs(spec, dt)
    # strided: each named tensor its own stride (layouts.row_pad): x's N + 64, y's (third of x, w, y) N + 192
    for layout, strides in ((None, [24, 24]), (STRIDED, [24 + L.ROW_PAD, 24 + 3 * L.ROW_PAD])):
        out = execute(rc.run_cuda, spec, xs, dt, spec.op_params(), "cuda", layout=layout)
        launched = lib.launched[-1]
        assert launched.types()[5:7] == [c_int32, c_int64] and launched.values()[5:7] == strides
        assert not (out.unwritten or out.guard_hits or out.gap_hits)
        assert out.outputs["y"].tobytes() == _reference(xs, spec.op_params()["eps"]).tobytes()
    assert not lib.allocs


def test_a_kernel_ignoring_the_row_stride_fails_the_strided_case_naming_the_fix(lib):
    spec = _spec("emu-no-stride", "no_stride", dts=(BF16,))
    report = run_case(spec, BF16, "strided_rows_pad64", _xs(spec, BF16, M=6), CUDA, layout=STRIDED)
    checks = {f.check for f in report.findings}
    # y's rows N + 192 apart (layouts.row_pad): rows stored at r * N all land in row 0 and its gap, the others stay
    # poisoned
    assert {"out-of-range-write", "unwritten"} <= checks
    gap = next(f for f in report.findings if "gaps between rows" in f.message)
    assert "first at row 0, column 24" in gap.message and "Contracts(layout='contiguous')" in gap.message
    # the same kernel on contiguous rows: nothing to see
    assert not run_case(spec, BF16, "normal_small", _xs(spec, BF16, M=6), CUDA).findings


def test_strided_cases_are_listed_not_run_where_no_stride_is_passed_or_contiguity_is_declared(lib):
    plain = _spec("emu-plain", "rows", args=("x", "w", "y", "M", "N", "eps"))
    closed = gate.before_inputs(plain, F32, "strided_rows_pad64", 6, 1024, STRIDED, "cuda")
    assert closed.kind == gate.CONTRACT and closed.reason == gate.NO_STRIDE
    assert "the launch passes no row stride" in closed.text
    declared = _spec("emu-contig", "rows", contracts=Contracts(layout="contiguous"))
    closed = gate.before_inputs(declared, F32, "strided_rows_pad64", 6, 1024, STRIDED, "cuda")
    assert closed.reason == "not checked: declared layout=contiguous"
    assert gate.before_inputs(_spec("emu-rows", "rows"), F32, "strided_rows_pad64", 6, 1024, STRIDED, "cuda") is None
    # callables and Triton kernels get strided views whatever they pass; contiguity declared leaves them out too
    fn = CallableKernel(name="c", op="rmsnorm", fn=lambda *a: None, dtypes=[F32], contracts=Contracts(layout="contiguous"))
    assert gate.before_inputs(fn, F32, "strided_rows_pad64", 6, 1024, STRIDED, "cpu").kind == gate.CONTRACT


def test_callables_get_non_contiguous_views_and_gap_writes_are_found():
    seen = {}

    def norm(inputs, outputs, params, dt):
        seen.update({k: (tuple(t.stride()), t.is_contiguous()) for k, t in {**inputs, **outputs}.items()})
        x = inputs["x"].float()
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + params["eps"]) * inputs["w"].float()
        outputs["y"].copy_(y)

    def spills(inputs, outputs, params, dt):
        norm(inputs, outputs, params, dt)
        y = outputs["y"]
        y.as_strided((y.shape[0], y.shape[1] + 1), (y.stride(0), 1))[:, -1] = 0  # one element past each row

    spec = CallableKernel(name="c-norm", op="rmsnorm", fn=norm, dtypes=[F32])
    xs = _xs(spec, F32, M=6, N=40)
    assert not run_case(spec, F32, "strided_rows_pad64", xs, CPU, layout=STRIDED).findings
    # each 2-D tensor its own row stride (layouts.row_pad): x's N + 64, y's (third of x, w, y) N + 192
    assert seen["x"] == ((40 + L.ROW_PAD, 1), False) and seen["y"] == ((40 + 3 * L.ROW_PAD, 1), False)
    assert seen["w"] == ((1,), True)
    bad = run_case(CallableKernel(name="c-spill", op="rmsnorm", fn=spills, dtypes=[F32]), F32, "strided_rows_pad64",
                   xs, CPU, layout=STRIDED)
    assert [f.check for f in bad.findings] == ["out-of-range-write"]
    assert "6 elements written in the gaps between rows, first at row 0, column 40" in bad.findings[0].message


def test_input_gaps_hold_the_dtype_max_so_reading_them_changes_the_result():
    def reads_gap(inputs, outputs, params, dt):  # includes the element past the row end in the max
        x = inputs["x"]
        wide = x.as_strided((x.shape[0], x.shape[1] + 1), (x.stride(0), 1)).float()
        m = wide.max(-1, keepdim=True).values
        e = torch.exp(x.float() - m)
        outputs["y"].copy_(e / e.sum(-1, keepdim=True))

    spec = CallableKernel(name="c-gap", op="softmax", fn=reads_gap, dtypes=[BF16])
    report = run_case(spec, BF16, "strided_rows_pad64", _xs(spec, BF16, M=4, N=64), CPU, layout=STRIDED)
    assert "nan-inf" in {f.check for f in report.findings} or "value" in {f.check for f in report.findings}
    assert L.gap_value("bfloat16") == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max) and L.gap_value("int64") == 2 ** 63 - 1


# --- unaligned pointers -----------------------------------------------------------------------------------------
def test_unaligned_case_starts_every_tensor_one_element_past_16_bytes(lib):
    ce = CudaKernel(name="emu-ce", op="cross_entropy", source="emulated.cu", dtypes=[dtypes("bf16", "f32")],
                    launches=lambda M, N, dt, p: [Launch("pointers_bf16", grid=(M,), block=(32,),
                                                         args=("x", "labels", "loss", "M", "N"))])
    xs = _xs(ce, ce.dtypes[0], M=4, N=32)
    execute(rc.run_cuda, ce, xs, ce.dtypes[0], ce.op_params(), "cuda", layout=UNALIGNED, check_poison=False)
    x, labels, loss = lib.seen
    assert (x % 16, labels % 16, loss % 16) == (2, 8, 4)  # bf16, int64, float32: one element past 16 bytes
    execute(rc.run_cuda, ce, xs, ce.dtypes[0], ce.op_params(), "cuda", check_poison=False)
    assert all(p % 16 == 0 for p in lib.seen)


def test_a_misaligned_vector_load_is_a_crash_whose_fix_says_check_alignment_or_declare_it(lib):
    spec = _spec("emu-vector", "vector", dts=(BF16,))
    assert not run_case(spec, BF16, "normal_small", _xs(spec, BF16, N=64), CUDA).findings
    from verifier.results.kernel import KernelReport

    report = KernelReport(spec=spec, device="cuda")
    with pytest.raises(KernelFault):  # a CUDA fault: recorded, then raised to end the kernel's battery
        run_case(spec, BF16, C._LAYOUT_CASES[1][0], _xs(spec, BF16, N=64), CUDA, report, layout=UNALIGNED)
    (f,) = report.findings
    assert f.check == "crash" and "misaligned address" in f.message
    assert "check the pointers' alignment before vector loads" in f.message and "Contracts(alignment=16)" in f.message
    declared = _spec("emu-vector16", "vector", dts=(BF16,), contracts=Contracts(alignment=16))
    closed = gate.before_inputs(declared, BF16, "unaligned_1elem_past_16bytes", 4, 1024, UNALIGNED, "cuda")
    assert closed.reason == "not checked: declared alignment=16"


def test_alignment_contract_values():
    spec = CallableKernel(name="a8", op="reduce_sum", fn=lambda *a: None, dtypes=[dtypes("f32")],
                          contracts=Contracts(alignment=4))
    assert layout_excluded(spec, L.UNALIGNED, [4, 4]) is None  # a float32 one element past 16 bytes is 4-aligned
    assert layout_excluded(spec, L.UNALIGNED, [2, 4]) == "not checked: declared alignment=4"
    for bad in ({"layout": "rowmajor"}, {"alignment": 3}, {"alignment": True}, {"alignment": "16"}):
        with pytest.raises(SpecError, match="is not a"):
            Contracts(**bad)


def test_stride_arguments_are_checked():
    with pytest.raises(SpecError, match="'int32' or 'int64'"):
        Stride("x", "int16")
    spec = _spec("emu-w-stride", "rows", args=("x", "w", "y", "M", "N", "w.stride", "y.stride", "eps"))
    with pytest.raises(SpecError, match="not a 2-D tensor of the op"):
        rc.bind_args(spec, spec.launches(2, 8, F32, {})[0], 2, 8, {"eps": 1e-6},
                     {t: np.uint64(0x1000) for t in ("x", "w", "y")}, None, {"x": 8, "y": 8})


# --- more than 2^31 elements ------------------------------------------------------------------------------------
def test_large_case_geometry():
    for N in L.LARGE_N:
        M = L.large_rows(N)
        assert M * N >= 2 ** 31 + 2 * N
        rows = L.judged_rows(M, N)
        w = L.wrap_row(N)
        assert w * N <= 2 ** 31 < (w + 1) * N and {w - 1, w, w + 1, M - 1, 0} <= set(rows.tolist())
    assert F.large_case().M == 14186 and F.large_case().N == 152064
    assert "row offset crosses 2^31: a 32-bit index?" in L.wrap_words(14186, 152064)


def test_large_case_takes_the_longest_row_supports_accepts():
    def spec(supports):
        return CallableKernel(name="c", op="rmsnorm", fn=lambda *a: None, dtypes=[BF16], supports=supports)

    def large_of(s):
        return next(c for c in cases_for(s, BF16, "thorough") if c.name == F.LARGE_CASE)

    assert large_of(spec(lambda M, N, dt: None)).N == 152064
    case = large_of(spec(max_row(8192)))
    assert (case.N, case.M) == (8192, 2 ** 31 // 8192 + L.TAIL_ROWS)
    refused = large_of(spec(lambda M, N, dt: "never"))
    assert refused.N == 152064 and gate.before_inputs(spec(lambda M, N, dt: "never"), BF16, refused.name, refused.M,
                                                      refused.N, refused.layout, "cuda").kind == gate.REFUSED
    assert F.LARGE_CASE in {c.name for c in cases_for(spec(lambda M, N, dt: None), BF16, "ci")}  # issue #36


def test_large_case_needs_a_gpu_with_the_memory(lib):
    s = CallableKernel(name="c", op="fused_add_rmsnorm", fn=lambda *a: None, dtypes=[BF16])
    case = F.large_case()
    need = large.required_bytes("fused_add_rmsnorm", BF16, case.M, case.N, s.op_params())
    assert need > 3 * case.M * case.N * 2  # x, residual, y in bf16, and the slack (a GPU without aliased pages)
    mapped = large.required_bytes("fused_add_rmsnorm", BF16, case.M, case.N, s.op_params(), mapped=True)
    assert mapped < 1.5e9  # with them: three tensors of tens of megabytes, and the slack
    cpu = gate.before_inputs(s, BF16, case.name, case.M, case.N, case.layout, "cpu")
    assert cpu.kind == gate.DEVICE and f"needs a GPU with >= {mapped / 1e9:.1f} GB free; this run is on cpu" in cpu.text
    lib.free_bytes = 2 << 30
    small = gate.before_inputs(s, BF16, case.name, case.M, case.N, case.layout, "cuda")
    assert small.reason.endswith("device 0 has 2.1 GB free")
    lib.free_bytes = 80 << 30
    assert gate.before_inputs(s, BF16, case.name, case.M, case.N, case.layout, "cuda") is None


def test_large_inputs_never_hold_the_whole_array():
    spec = CallableKernel(name="c", op="fused_add_rmsnorm", fn=lambda *a: None, dtypes=[BF16])
    case = F.large_case()
    xs = draw(spec, BF16, case, 0)
    for t in ("x", "residual"):
        v = xs[t]
        assert isinstance(v, L.SparseRows) and v.shape == (case.M, case.N) and v.held().nbytes < 20 * case.N * 2
        assert set(v.rows) == set(L.judged_rows(case.M, case.N).tolist())
        assert not np.array_equal(v[[0]], v[[1]])  # judged rows drawn apart from the pattern
    assert xs["w"].shape == (case.N,)


SMALL = F.large_case(100, 4096)  # the wrap at 2^12: 104 rows of 100, judged on both sides of row 40


@pytest.mark.parametrize("body, expect", [("rows", set()), ("wraps", {"crash"}), ("skip_row", {"unwritten"})])
def test_large_case_on_driver_buffers_with_a_simulated_wrap(lib, monkeypatch, body, expect):
    monkeypatch.setattr(large, "CHUNK_BYTES", 1000)  # the poison counted in chunks of a few rows
    spec = _spec(f"emu-large-{body}", body, dts=(BF16,))
    from verifier.results.kernel import KernelReport

    report = KernelReport(spec=spec, device="cuda")
    try:
        run_case(spec, BF16, SMALL.name, draw(spec, BF16, SMALL, 0), CUDA, report, layout=SMALL.layout)
    except KernelFault:
        pass
    assert {f.check for f in report.findings} == expect
    for f in report.findings:
        assert "row offset crosses 2^12: a 32-bit index?" in f.message
    if body == "skip_row":
        assert "100 of 10400 elements left unwritten (still poisoned), first in row 60" in report.findings[0].message
    assert "cuMemcpyDtoD" in lib.calls and not lib.allocs


def test_large_case_on_torch_tensors_judges_the_selected_rows_only():
    wrap = SMALL.layout.wrap

    def softmax(inputs, outputs, params, dt):
        outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))

    def offsets_wrap(inputs, outputs, params, dt):  # reads row r at (r * N) mod wrap: silently wrong rows
        x = inputs["x"]
        M, N = x.shape
        flat = x.reshape(-1)
        rows = torch.stack([flat[(r * N) % wrap:(r * N) % wrap + N] for r in range(M)])
        outputs["y"].copy_(torch.softmax(rows.float(), -1))

    def wrong_unjudged_row(inputs, outputs, params, dt):  # row 20 is wrong, and no judged row is 20
        softmax(inputs, outputs, params, dt)
        outputs["y"][20] = outputs["y"][21]

    found = {}
    for fn in (softmax, offsets_wrap, wrong_unjudged_row):
        spec = CallableKernel(name=fn.__name__.replace("_", "-"), op="softmax", fn=fn, dtypes=[BF16])
        found[fn.__name__] = run_case(spec, BF16, SMALL.name, draw(spec, BF16, SMALL, 0), CPU,
                                      layout=SMALL.layout).findings
    assert not found["softmax"] and not found["wrong_unjudged_row"]  # only the selected rows are judged
    value = next(f for f in found["offsets_wrap"] if f.check == "value")
    import re

    row = int(re.search(r"worst at \[(\d+), ", value.message).group(1))
    assert row in (41, 102, 103)  # a real row past the wrap, not an index among the 6 judged
    assert "row offset crosses 2^12: a 32-bit index?" in value.message


def test_judge_rows_is_the_judge_of_those_rows_speaking_of_the_real_rows():
    spec = CallableKernel(name="c", op="softmax", fn=lambda *a: None, dtypes=[F32])
    c = Criteria.of(spec, F32)
    xs = _xs(spec, F32, M=6, N=32)
    y = torch.softmax(torch.from_numpy(xs["x"]), -1).numpy()
    y[4, 7] *= 1.5
    whole = judge(c, xs, {"y": y})
    part = judge(c, xs, {"y": y}, rows=[1, 4])
    assert whole.comparison["y"].worst[0].index == part.comparison["y"].worst[0].index == (4, 7)
    assert part.comparison["y"].numel == 64 and part.comparison["y"].mismatched == whole.comparison["y"].mismatched
    assert [v.rows.tolist() for v in part.violations] == [[4]] * len(part.violations) and part.violations
    assert judge(c, xs, {"y": y}, rows=[0, 5]).ok


# --- log-domain extremes ----------------------------------------------------------------------------------------
def test_log_rows_catch_exponentiate_then_log_which_randn_misses():
    def exp_then_log(inputs, outputs, params, dt):
        x = inputs["x"].float()
        e = torch.exp(x - x.max(-1, keepdim=True).values)
        outputs["y"].copy_(torch.log(e / e.sum(-1, keepdim=True)))

    def neg_log_p(inputs, outputs, params, dt):
        p = torch.softmax(inputs["x"].float(), -1)
        lab = inputs["labels"].long()
        ign = lab == params["ignore_index"]
        loss = -torch.log(p.gather(1, torch.where(ign, 0, lab)[:, None])[:, 0])
        outputs["loss"].copy_(torch.where(ign, torch.zeros_like(loss), loss))

    for fn, op, dt, rows in ((exp_then_log, "log_softmax", F32, ("ls_wide_rows_randn50", "ls_one_logit_200_above")),
                             (neg_log_p, "cross_entropy", dtypes("f32"), ("ce_wide_rows_randn50", "ce_one_logit_200_above",
                                                                          "ce_label_at_min_randn50"))):
        spec = CallableKernel(name=op.replace("_", "-"), op=op, fn=fn, dtypes=[dt])
        by_name = {c.name: c for c in cases_for(spec, dt, "ci")}
        assert not run_case(spec, dt, "normal_small", draw(spec, dt, by_name["normal_small"], 0), CPU).findings
        for name in rows:
            found = run_case(spec, dt, name, draw(spec, dt, by_name[name], 0), CPU).findings
            assert "nan-inf" in {f.check for f in found}, (op, name)


# --- the bundled CUDA kernels: strides passed where the source takes them, arguments as the entries declare ----------
_PTX_WIDTH = {"u64": 8, "s64": 8, "b64": 8, "u32": 4, "s32": 4, "b32": 4, "f32": 4}


def _entry_params(ptx: str, entry: str) -> list:
    import re

    body = ptx[ptx.index(f".entry {entry}("):]
    body = body[:body.index(")")]
    return [_PTX_WIDTH[t] for t in re.findall(r"\.param\s+\.(\w+)", body)]


@pytest.mark.skipif(__import__("shutil").which("nvcc") is None, reason="needs nvcc to compile the bundled kernels' PTX")
def test_every_bundled_cuda_launch_matches_its_entry_and_passes_the_strides_its_source_takes():
    from pathlib import Path

    from verifier.declare.registry import load
    from verifier.ops import get_op
    from verifier.toolchain.nvcc import compile_ptx

    root = Path(__file__).resolve().parents[1] / "kernels"
    strided = set()
    specs = load([str(root / "cuda")]) + [k for k in load([str(root / "defects" / "cuda" / "defects.py")])
                                          if k.source.endswith("input_defects.cu")]
    for spec in specs:
        for dt in spec.dtypes:
            N = next(n for n in (1024, 4096, 8192, 152064, 256) if spec.check_supported(4, n, dt) is None)  # 256: routing
            op = get_op(spec.op)
            pointers = {t: np.uint64(4096) for t in op.tensors()}
            strides = {t: N + 64 for t in op.tensors() if len(op.shape_of(t, 4, N)) == 2}
            ptx = compile_ptx(spec.source_path(), arch="sm_90", defines=dict(spec.defines(dt))).read_text()
            for launch in rc.launches_for(spec, 4, N, dt, spec.op_params()):
                args = rc.bind_args(spec, launch, 4, N, spec.op_params(), pointers, lambda ws: np.uint64(8192), strides)
                assert [a.dtype.itemsize for a in args] == _entry_params(ptx, launch.entry), (spec.name, launch.entry)
            if rc.strided_tensors(spec, 4, N, dt, spec.op_params()):
                strided.add(spec.name)
    names = {s.name for s in specs}
    unstrided = names - strided
    assert all(n.startswith(("cuda-softmax-s5", "cuda-softmax-split", "cuda-softmax-cluster", "cuda-allreduce",
                             "defect-cuda-ce"))
               for n in unstrided), sorted(n for n in unstrided if not n.startswith("cuda-allreduce"))
    assert {"cuda-rmsnorm-n1", "cuda-fused-add-rmsnorm", "cuda-layernorm-welford", "cuda-softmax-s4",
            "cuda-online-softmax-warp", "cuda-cross-entropy"} <= strided


def test_the_large_case_draws_weights_in_their_own_dtype():
    # a kernel declaring f32 weights with bf16 activations (dtypes("bf16", weight="f32")) gets them in the large
    # case as in every other: drawn by the catalogue's one input loop
    case = F.large_case(N=4096, wrap=1 << 16)
    xs = case.make(np.random.default_rng(0), dtypes("bf16", weight="f32"), "layernorm", {})
    assert xs["w"].dtype == np.float32 and xs["b"].dtype == np.float32 and xs["x"].dtype == ml_dtypes.bfloat16

"""Outputs a kernel writes at a layout of its own (``output_layout``, verifier.declare.out_layouts): ggml's fused
MoE top-k writes its ids rows n_expert apart (the first k columns of the argsort buffer it replaces), FP8 GEMM
quantizers write group scales column-major with a padded leading dimension. Declared, the harness allocates the
output so and the judge reads its logical view; undeclared, the kernel's writes are findings, never a pass; writes
into the padding and unwritten elements of the view are still found."""
from __future__ import annotations

from ctypes import c_int32

import numpy as np
import pytest
import torch

from fake_libcuda import install
from verifier.battery import check_kernel, gate
from verifier.battery.values import run_case
from verifier.errors import SpecError
from verifier.gpu import libcuda as cd
from verifier.inputs import layouts as L
from verifier.inputs.cases import random_inputs
from verifier.launch import cuda as rc
from verifier.launch.harness import execute
from verifier.results.options import Options
from verifier.spec import CallableKernel, ColumnMajor, CudaKernel, Launch, RowStride, Scalar, Stride, dtypes

F32, E4M3 = dtypes("f32"), dtypes("bf16", "e4m3")
CPU = Options(device="cpu")
K = 4


def _topk(stride=None, skip=False, pad_write=False):
    """A router writing ``indices`` at its own row stride (``stride(E)``; None: the tensor's), as a kernel whose
    stride is in its code does: it writes from the tensor's first element, whatever the caller's layout."""
    def fn(inputs, outputs, params, dt):
        x = inputs["x"].float()
        M, E = x.shape
        v, i = torch.softmax(x, -1).topk(params["k"], -1)
        outputs["values"].copy_(v)
        s = outputs["indices"].stride(0) if stride is None else stride(E)
        raw = outputs["indices"].as_strided((M, params["k"] + pad_write), (s, 1))
        held = raw[0, params["k"] - 1].clone()  # what the buffer held there (the poison)
        raw[:, :params["k"]] = i.to(torch.int32)
        if skip:  # row 0's last pick never stored
            raw[0, params["k"] - 1] = held
        if pad_write:
            raw[:, -1] = 0  # one element past each row of k: into the padding
    return fn


def _router(name, fn, **kw):
    return CallableKernel(name=name, op="topk_softmax", fn=fn, dtypes=[F32], params={"k": K}, **kw)


def _xs(spec, M=6, N=16):
    return random_inputs(spec, F32, M, N, np.random.default_rng(0))


IDS_AT_E = {"indices": RowStride("N")}


def test_ids_written_n_expert_apart_pass_when_declared():
    spec = _router("ids-at-e", _topk(lambda E: E), output_layout=IDS_AT_E)
    out = execute(spec_run(spec), spec, _xs(spec), F32, spec.op_params(), "cpu")
    assert not (out.unwritten or out.guard_hits or out.gap_hits)
    assert out.outputs["indices"].shape == (6, K) and out.outputs["indices"].dtype == np.int32
    assert not run_case(spec, F32, "normal_small", _xs(spec), CPU).findings


@pytest.mark.parametrize("kind", [L.STRIDED, L.UNALIGNED])
def test_the_layout_cases_keep_the_declared_layout(kind):
    """Strided rows for x, or every tensor one element past 16 bytes: ids stay E apart, from their first element."""
    seen = {}

    def fn(inputs, outputs, params, dt):
        seen.update(x=inputs["x"].stride(), ids=outputs["indices"].stride(), at=outputs["indices"].data_ptr() % 16)
        _topk(lambda E: E)({"x": inputs["x"].contiguous()}, outputs, params, dt)

    spec = _router("ids-at-e", fn, output_layout=IDS_AT_E)
    assert not run_case(spec, F32, "normal_small", _xs(spec), CPU, layout=L.Layout(kind)).findings
    assert seen["ids"] == (16, 1)
    assert seen["x"] == ((16 + L.ROW_PAD, 1) if kind == L.STRIDED else (16, 1))
    assert seen["at"] == (4 if kind == L.UNALIGNED else 0)


def spec_run(spec):
    from verifier.launch import runner_for

    return runner_for(spec)


def test_the_same_kernel_undeclared_is_a_finding_never_a_pass():
    """Without output_layout the ids buffer is [M, k] contiguous: rows n_expert apart land past it (guard bytes) and
    the judged view holds the wrong rows."""
    report = run_case(_router("ids-at-e-undeclared", _topk(lambda E: E)), F32, "normal_small", _xs(_router("s", _topk())),
                      CPU)
    checks = {f.check for f in report.findings}
    assert checks & {"out-of-range-write", "value", "crash", "unwritten"}, report.findings
    guard = next(f for f in report.findings if f.check == "out-of-range-write")
    assert "guard bytes changed" in guard.message and "output_layout={'indices': RowStride(...)}" in guard.message


def test_a_kernel_writing_at_another_stride_than_declared_fails():
    report = run_case(_router("ids-at-e-minus-1", _topk(lambda E: E - 1), output_layout=IDS_AT_E), F32,
                      "normal_small", _xs(_router("s", _topk())), CPU)
    checks = {f.check for f in report.findings}
    assert "value" in checks and "out-of-range-write" in checks, report.findings
    gap = next(f for f in report.findings if f.check == "out-of-range-write")
    assert "padding of its declared layout (strides 16, 1)" in gap.message


def test_padding_writes_and_unwritten_elements_of_the_view_are_found():
    pads = run_case(_router("pads", _topk(lambda E: E, pad_write=True), output_layout=IDS_AT_E), F32, "normal_small",
                    _xs(_router("s", _topk())), CPU)
    assert [f.check for f in pads.findings] == ["out-of-range-write"], pads.findings
    assert "6 elements written in the padding of its declared layout (strides 16, 1), first at row 0, column 4 " \
           "(past its row's 4 elements)" in pads.findings[0].message
    skips = run_case(_router("skips", _topk(lambda E: E, skip=True), output_layout=IDS_AT_E), F32, "normal_small",
                     _xs(_router("s", _topk())), CPU)
    unwritten = [f for f in skips.findings if f.check == "unwritten"]
    assert unwritten and "output 'indices': 1 of 24 elements left unwritten" in unwritten[0].message


def _group_quant(ld=None, transposed=True):
    """Per-token-group fp8 quantization writing its [M, G] scales column-major, columns ``ld(M)`` apart."""
    def fn(inputs, outputs, params, dt):
        x = inputs["x"].float()
        M, N = x.shape
        G = N // params["group_size"]
        g = x.view(M, G, params["group_size"])
        s = (g.abs().amax(-1) / 448.0).clamp(min=params["floor"])
        outputs["y"].copy_((g / s[..., None]).clamp(-448, 448).view(M, N).to(torch.float8_e4m3fn))
        sc = outputs["scale"]
        raw = sc.as_strided((M, G), (1, ld(M)) if transposed else (G, 1))
        raw.copy_(s)
    return fn


def _quant(name, fn, **kw):
    return CallableKernel(name=name, op="per_token_group_quant", fn=fn, dtypes=[E4M3], params={"group_size": 16}, **kw)


def _tma(M, N, p):
    return -(-M // 4) * 4  # TMA-aligned: columns a multiple of 16 bytes apart


def test_column_major_scales_with_a_padded_leading_dimension():
    xs = random_inputs(_quant("q", _group_quant()), E4M3, 6, 64, np.random.default_rng(1))
    ok = _quant("q-colmajor", _group_quant(lambda M: _tma(M, 0, {})), output_layout={"scale": ColumnMajor(_tma)})
    assert not run_case(ok, E4M3, "normal_small", xs, CPU).findings
    undeclared = run_case(_quant("q-undeclared", _group_quant(lambda M: M)), E4M3, "normal_small", xs, CPU)
    assert "value" in {f.check for f in undeclared.findings}, undeclared.findings
    row_major = run_case(_quant("q-rowmajor", _group_quant(transposed=False), output_layout={"scale": ColumnMajor()}),
                         E4M3, "normal_small", xs, CPU)
    assert "value" in {f.check for f in row_major.findings}, row_major.findings


def test_declarations_are_checked_where_made():
    with pytest.raises(SpecError, match="not an output of op topk_softmax"):
        _router("bad", _topk(), output_layout={"x": RowStride("N")})
    with pytest.raises(SpecError, match="RowStride's stride is 0"):
        RowStride(0)
    with pytest.raises(SpecError, match="lays out 2-D outputs, 'scale' is 1-D"):
        CallableKernel(name="q", op="per_token_quant", fn=_topk(), dtypes=[E4M3], output_layout={"scale": ColumnMajor()})
    with pytest.raises(SpecError, match="is not a layout"):
        _router("bad", _topk(), output_layout={"indices": 16})


def test_a_stride_shorter_than_the_row_is_the_kernels_error_not_a_traceback():
    spec = _router("short", _topk(), output_layout={"indices": RowStride(lambda M, N, p: 2)})
    r = check_kernel(spec, Options(level="quick", device="cpu", case="normal_small"))
    assert r.verdict == "error" and "shorter than the output's rows of 4" in r.error and "fix:" in r.error, r.error


def test_large_cases_lay_out_declared_rows_only_on_aliased_pages(monkeypatch):
    """Rows a declared stride apart go on the large cases' aliased pages (a CPU's Triton: tests/
    test_output_layout_triton.py); a column-major output, or a GPU without the virtual memory API, is not run."""
    from verifier.launch import large

    big = L.Layout(L.LARGE)
    col = _quant("q-colmajor", _group_quant(lambda M: M), output_layout={"scale": ColumnMajor()})
    closed = gate.before_inputs(col, E4M3, "large_index_2pow31", 131136, 16384, big, "cuda")
    assert closed.kind == gate.CONTRACT and "output 'scale' is declared ColumnMajor('M')" in closed.text
    rows = _router("ids-at-e", _topk(lambda E: E), output_layout=IDS_AT_E)
    monkeypatch.setattr(large, "aliased", lambda: False)
    closed = gate.before_inputs(rows, F32, "large_index_2pow31", 131136, 16384, big, "cuda")
    assert closed.kind == gate.DEVICE and "virtual memory API (aliased pages) for output 'indices'" in closed.text
    assert gate._declared_in_large(rows, "large_index_2pow31", "cpu") is None


# --- the CUDA path (fake libcuda): ggml's topk_moe, ids n_expert apart, told nothing --------------------------------
def _ggml_like(lib, a):
    """(logits, weights, ids, M, k): ggml's topk_moe writes ids[k] at ids + n_experts * row (E fixed: 16)."""
    logits, weights, ids, M, k = a[:5]
    E = 16
    for r in range(M):
        x = lib.view(logits + 4 * r * E, np.float32, E).astype(np.float64)
        p = np.exp(x - x.max())
        p /= p.sum()
        top = np.argsort(-p, kind="stable")[:k]
        lib.view(weights + 4 * r * k, np.float32, k)[:] = p[top].astype(np.float32)
        lib.view(ids + 4 * r * E, np.int32, k)[:] = top.astype(np.int32)
    lib.seen = a


@pytest.fixture
def lib(monkeypatch):
    from verifier.gpu import probe

    probe.driver_device_count.cache_clear()
    fake = install({"topk_moe": _ggml_like}, monkeypatch.setattr)
    yield fake
    cd._primary.cache_clear()
    probe.driver_device_count.cache_clear()
    probe.capability.cache_clear()


def test_a_cuda_kernel_gets_the_declared_rows_and_its_stride(lib):
    args = ("x", "values", "indices", "M", Scalar("int32", K), Stride("indices"))
    spec = CudaKernel(name="ggml-like", op="topk_softmax", source="emulated.cu", dtypes=[F32], params={"k": K},
                      launches=lambda M, N, dt, p: [Launch("topk_moe", grid=(M,), block=(32,), args=args)],
                      output_layout=IDS_AT_E)
    xs = _xs(spec)
    out = execute(rc.run_cuda, spec, xs, F32, spec.op_params(), "cuda")
    assert not (out.unwritten or out.guard_hits or out.gap_hits)
    assert lib.launched[-1].types()[5] == c_int32 and lib.launched[-1].values()[5] == 16  # Stride("indices") is E
    want = np.argsort(-xs["x"], axis=1, kind="stable")[:, :K]
    assert (out.outputs["indices"] == want).all()
    # the strided case leaves the declared output as declared (its stride is the kernel's, not the caller's)
    out = execute(rc.run_cuda, spec, xs, F32, spec.op_params(), "cuda", layout=L.Layout(L.STRIDED))
    assert not (out.unwritten or out.guard_hits or out.gap_hits) and (out.outputs["indices"] == want).all()
    assert not lib.allocs


def test_where_no_tensor_exists_the_model_layout_has_the_declared_stride():
    """The build step, lint and the gate evaluate launches on model tensors: a five-parameter launches reading the
    stride of a declared output gets the declared one (a host passing it on, as ggml's asserts ids->nb[1])."""
    asked = []

    def launches(M, N, dt, p, layout):
        asked.append(layout.stride("indices"))
        return [Launch("topk_moe", grid=(M,), block=(32,), args=("x", "values", "indices", "M"))]

    spec = CudaKernel(name="ggml-like", op="topk_softmax", source="emulated.cu", dtypes=[F32], params={"k": K},
                      launches=launches, output_layout=IDS_AT_E)
    assert rc.model_tensors(spec, 6, 64, F32, spec.op_params())["indices"].stride == 64
    rc.launches_for(spec, 6, 64, F32, spec.op_params())
    assert asked == [64]
    assert rc.model_tensors(spec, 6, 64, F32, spec.op_params(), L.STRIDED)["values"].stride == K  # passes no stride


def test_the_gpu_tests_router_builds_and_lints_clean_here():
    """tests/data/output_layout (tests/test_output_layout_gpu.py): on a CPU its build and static steps run, its values
    wait for a GPU (unchecked, never a pass)."""
    from pathlib import Path

    from verifier.declare.registry import load_spec_file

    for spec in load_spec_file(Path(__file__).parent / "data" / "output_layout" / "topk_rows_spec.py"):
        r = check_kernel(spec, Options(level="ci", device="cpu"))
        assert r.verdict == "unchecked" and not r.findings, (spec.name, [f.message for f in r.findings])
        assert r.cells[("f32", "static")].status == r.cells[("f32", "build")].status == "pass", r.cells


def test_the_whole_battery_passes_a_declared_router_whose_layout_cannot_hold_refused_shapes():
    """The refusal step probes shapes supports() refuses (a row of 1 expert for ids of k = 4): RowStride('N') cannot
    hold those, and the runner refuses them before anything runs. It was an error ('gives rows 1 elements apart')."""
    spec = _router("ids-at-e", _topk(lambda E: E), output_layout=IDS_AT_E,
                   supports=lambda M, N, dt: None if N >= K else "fewer experts than k")
    r = check_kernel(spec, Options(level="quick", device="cpu"))
    assert r.verdict == "pass" and r.error is None and not r.findings, (r.error, [f.message for f in r.findings])


def test_bench_reallocates_declared_outputs_poisoned():
    from verifier.bench.timing import declared_outputs

    spec = _router("ids-at-e", _topk(lambda E: E), output_layout=IDS_AT_E)
    outputs = {"values": torch.zeros(6, K), "indices": torch.zeros(6, K, dtype=torch.int32)}
    got = declared_outputs(spec, outputs, 6, 16)
    assert set(got) == {"indices"} and got["indices"].stride() == (16, 1) and (got["indices"] == -1).all()
    assert got["indices"].untyped_storage().nbytes() == 6 * 16 * 4  # whole rows of 16: the padding is there

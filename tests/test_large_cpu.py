"""The large cases on a CPU (issue #36): a Triton kernel in the interpreter runs them on aliased host memory
(verifier.launch.host_alias: the GPU's aliasing plan over memory files), only the programs owning the judged rows
(verifier.launch.sparse_grid, verifier.launch.row_owners: established on the kernel itself, never assumed), so a
32-bit row offset is caught by ``verifier check`` on a laptop and in CI, and a kernel whose programs cannot be told
apart is not run, with the reason, never passed or accused."""
import os

import numpy as np
import pytest
from op_registry import registry  # noqa: F401 (the fixture)

from verifier.gpu import aliasing
from verifier.launch import host_alias
from verifier.launch import row_owners as ro
from verifier.launch.sparse_grid import Launch, grid_limit_error
from interpreter_process import interpreter  # noqa: F401 (the fixture)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFECTS = os.path.join(ROOT, "kernels", "defects", "triton", "defects.py")


def _check(spec, case):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    return check_kernel(spec, Options(level="ci", device="cpu", case=case))


def _not_run(report, case):
    return [n for n in report.notes if f"case {case}" in n and "not run" in n]


# ------------------------------------------------------------------------------------------------ host memory

@pytest.mark.skipif(not host_alias.supported(), reason=host_alias.unsupported_reason())
def test_host_mapping_aliases_as_its_plan_says():
    chunk, k = host_alias.CHUNK, 4
    n = (3 * k + 5) * chunk
    own_at = chunk * (k + 2) + 100
    plan = aliasing.plan(n, [(own_at, 4000)], chunk, k)
    buf = host_alias.HostMappedBuffer(plan, apron=8 * chunk)
    try:
        pattern = np.arange(4096, dtype=np.int32)
        buf.fill_physical(pattern)
        assert (buf.download(np.int32, 4096, n - 2 * chunk) == pattern).all()  # a shared chunk far down the range
        own = np.full(1000, -7, dtype=np.int32)
        buf.upload(own, own_at)
        shared = [p for p in plan.pieces if p.phys == aliasing.SHARED]
        assert len(shared) >= 2
        buf.upload(np.full(10, 99, dtype=np.int32), shared[0].first * chunk)  # through one mapping ...
        assert (buf.download(np.int32, 10, shared[1].first * chunk) == 99).all()  # ... read through another
        assert (buf.download(np.int32, 1000, own_at) == own).all()  # the private chunk kept its own data
        head = np.where(np.arange(4096) < 10, 99, pattern)
        assert (buf._bytes(-buf.apron, 4 * 4096).view(np.int32) == head).all()  # the aprons map the shared file
        assert (buf._bytes(n, 4 * 4096).view(np.int32) == head).all()
        t = buf.torch_view(0, (n // 4 // 1024, 1024), 1024, __import__("torch").int32, 4)
        t[0, :3] = -1  # a torch view writes through the mapping
        assert (buf.download(np.int32, 3, 0) == -1).all()
    finally:
        buf.close()
    assert buf.ptr == 0


# ------------------------------------------------------------------------------------------------ row owners

def _launch(grid, fn=1):
    return Launch("k", fn, tuple(grid) + (1,) * (3 - len(grid)), (("BLOCK", "1024"),))


def test_the_grid_model_is_read_off_two_grids_and_refuses_what_it_cannot_tell():
    M, m = 131136, ro.PROBE_ROWS
    one = ro.model(_launch((M,)), M, _launch((m,)), m)
    assert (one.axis, one.per_block, one.rows) == (0, 1, 1)
    assert one.programs([0, 131072]) == [(0, 0, 0), (131072, 0, 0)]
    four = ro.model(_launch((-(-M // 4), 2)), M, _launch((-(-m // 4), 2)), m)
    assert (four.axis, four.per_block, four.rows) == (0, 1, 4)
    assert four.programs([5, 6]) == [(1, 0, 0), (1, 1, 0)]  # one block, both programs of axis y
    split = ro.model(_launch((M * 3,)), M, _launch((m * 3,)), m)  # three programs per row
    assert (split.per_block, split.rows) == (3, 1) and split.programs([2]) == [(6, 0, 0), (7, 0, 0), (8, 0, 0)]
    rows_on_y = ro.model(_launch((1, M)), M, _launch((1, m)), m)
    assert rows_on_y.axis == 1
    with pytest.raises(ro.NotSparse, match="the same at 5 and 131136 rows"):  # persistent: a grid-stride loop
        ro.model(_launch((132,)), M, _launch((132,)), m)
    with pytest.raises(ro.NotSparse, match="not K·ceil"):  # a capped grid: min(M, 1024) programs
        ro.model(_launch((1024,)), M, _launch((m,)), m)
    with pytest.raises(ro.NotSparse, match="more than one axis"):
        ro.model(_launch((M, M)), M, _launch((m, m)), m)
    with pytest.raises(ro.NotSparse, match="launches"):
        ro.model(_launch((M,)), M, _launch((m,), fn=2), m)


def test_a_grid_past_cudas_limits_is_what_compiled_triton_refuses():
    assert grid_limit_error((65600, 1, 1)) is None
    assert "axis y (65535)" in grid_limit_error((1, 65600, 1))
    assert "axis x" in grid_limit_error((2 ** 31, 1, 1))


# ------------------------------------------------------------------------------------------------ the interpreter

def test_a_32_bit_product_wraps_in_the_interpreter_as_compiled(interpreter):
    """program_id is int32 and an int argument below 2^31 is specialised to i32: their product wraps past 2^31, as
    compiled Triton's does (what a 32-bit row offset does); an argument of 2^31 or more is i64 and does not."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def offsets(out_ptr, stride):
        row = tl.program_id(0)
        tl.store(out_ptr + row, (row * stride).to(tl.int64))

    out = torch.zeros(4, dtype=torch.int64)
    offsets[(4,)](out, 2 ** 30 + 64)
    assert out.tolist() == [0, 2 ** 30 + 64, (2 * (2 ** 30 + 64)) - 2 ** 32, 3 * (2 ** 30 + 64) - 2 ** 32]
    offsets[(4,)](out, 2 ** 31 + 64)
    assert out.tolist() == [r * (2 ** 31 + 64) for r in range(4)]


def _defect_spec(name):
    from verifier.declare.registry import load_spec_file

    return next(k for k in load_spec_file(DEFECTS) if k.name == name)


def test_an_int32_row_offset_fails_large_index_2pow31_on_the_cpu_and_its_twin_passes(interpreter):
    bad = _check(_defect_spec("defect-triton-rmsnorm-int32-row-offset"), "large_index_2pow31")
    found = {f.check for f in bad.findings}
    assert {"unwritten", "nan-inf"} <= found, (found, bad.notes)
    unwritten = next(f for f in bad.findings if f.check == "unwritten")
    assert "first in row 131072" in unwritten.message and "row offset crosses 2^31" in unwritten.message
    twin = _check(_defect_spec("triton-rmsnorm-rows"), "large_index_2pow31")
    assert not twin.findings and twin.error is None and not _not_run(twin, "large_index_2pow31"), twin.notes
    assert twin.verdict == "pass" and twin.cells[("bf16", "unwritten")].status == "pass"


OWNERS = '''
import triton
import triton.language as tl


@triton.jit
def rmsnorm_rows(x_ptr, w_ptr, y_ptr, M, N, stride, eps, step, rows, BLOCK: tl.constexpr):
    # program p handles ``rows`` rows: p, p + step, p + 2 * step, ... (step = the grid: a grid-stride loop)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    for i in range(rows):
        row = tl.program_id(0).to(tl.int64) + i * step
        if row < M:
            x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
            rstd = tl.rsqrt(tl.sum(x * x, 0) / N + eps)
            tl.store(y_ptr + row * stride + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rmsnorm_on_y(x_ptr, w_ptr, y_ptr, N, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(1).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, 0) / N + eps)
    tl.store(y_ptr + row * stride + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def _go(inputs, outputs, params, grid, step, rows):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    rmsnorm_rows[grid](x, inputs["w"], y, M, N, x.stride(0), float(params["eps"]), step, rows,
                       BLOCK=triton.next_power_of_2(N))


def persistent(inputs, outputs, params, dt):  # 4 programs, a grid-stride loop over the rows
    M = inputs["x"].shape[0]
    _go(inputs, outputs, params, (4,), 4, triton.cdiv(M, 4))


def interleaved(inputs, outputs, params, dt):  # ceil(M / 2) programs, program p: rows p and p + ceil(M / 2)
    g = triton.cdiv(inputs["x"].shape[0], 2)
    _go(inputs, outputs, params, (g,), g, 2)


def rows_on_y(inputs, outputs, params, dt):  # one program per row on grid axis y
    x = inputs["x"]
    M, N = x.shape
    rmsnorm_on_y[(1, M)](x, inputs["w"], outputs["y"], N, x.stride(0), float(params["eps"]),
                         BLOCK=triton.next_power_of_2(N))
'''


def _owners_spec(tmp_path, launcher):
    from verifier.spec import TritonKernel, dtypes, max_row

    path = tmp_path / "owners.py"
    path.write_text(OWNERS)
    return TritonKernel(name=f"rmsnorm-{launcher}", op="rmsnorm", module=str(path), launcher=launcher,
                        dtypes=[dtypes("f32")], supports=max_row(1024))


@pytest.mark.parametrize("launcher, why", [
    ("persistent", "is the same at 5 and 2097216 rows (a persistent kernel"),
    ("interleaved", "alone write row 3 of 'y' too, outside rows 0..1"),
])
def test_a_kernel_whose_programs_cannot_be_told_apart_is_not_run_on_the_cpu(interpreter, tmp_path, launcher, why):
    """A grid-stride loop (the grid does not grow with M) and programs owning rows a grid apart (the grid grows, a
    block does not own its rows): correct kernels, which on a CPU get the reason, not a pass and not a finding."""
    report = _check(_owners_spec(tmp_path, launcher), "large_index_2pow31")
    assert not report.findings and report.error is None, report.findings
    said = _not_run(report, "large_index_2pow31")
    assert said and "needs a GPU" in said[0] and why in said[0], report.notes


def test_rows_on_grid_axis_y_fail_rows_past_65535_on_the_cpu_as_compiled(interpreter, tmp_path):
    report = _check(_owners_spec(tmp_path, "rows_on_y"), "rows_past_65535")
    assert report.findings, report.notes
    assert any("exceeds CUDA's limit on axis y (65535)" in f.message for f in report.findings), report.findings
    assert all("battery was not run" not in f.message for f in report.findings), report.findings


def test_a_grid_past_cudas_limit_is_a_crash_that_leaves_the_battery_running():
    """A grid CUDA refuses is refused before any program runs: a crash of the case, not a CUDA fault ending the
    kernel's battery on the CPU (Liger's DyT, rows on grid axis y, had every other case dropped), as a GPU's refused
    cuLaunchKernel leaves its context usable too."""
    from verifier.declare.usercode import classify
    from verifier.launch.outcome import KernelFault
    from verifier.launch.sparse_grid import GridLimit

    fault = KernelFault(GridLimit(grid_limit_error((1, 65600, 1))))
    assert not fault.cuda
    assert classify(None, fault) == "crash"


def test_a_callable_keeps_its_reason_for_not_running_large_cases_on_the_cpu():
    from verifier.battery import gate
    from verifier.inputs import large_family as F
    from verifier.spec import CallableKernel, dtypes

    s = CallableKernel(name="c", op="rmsnorm", fn=lambda *a: None, dtypes=[dtypes("bf16")])
    case = F.large_case()
    closed = gate.before_inputs(s, dtypes("bf16"), case.name, case.M, case.N, case.layout, "cpu")
    assert closed.kind == gate.DEVICE and "needs a GPU" in closed.text and "no grid whose programs" in closed.text


def test_at_ci_a_cpu_runs_large_index_2pow31_on_the_first_dtype_only():
    from verifier.battery import gate
    from verifier.inputs import large_family as F
    from verifier.spec import TritonKernel, dtypes

    s = TritonKernel(name="t", op="rmsnorm", module="k.py", launcher="go", dtypes=[dtypes("f32"), dtypes("bf16")])
    f32, bf16 = s.dtypes
    for case, dt, runs in ((F.large_case(), f32, True), (F.large_case(), bf16, False),
                           (F.large_case(wrap=2 ** 32, name=F.LARGE_2POW32), f32, False)):
        closed = gate.before_inputs(s, dt, case.name, case.M, case.N, case.layout, "cpu", "ci")
        assert (closed is None) == runs, (case.name, dt.tag, closed)
        assert gate.before_inputs(s, dt, case.name, case.M, case.N, case.layout, "cpu", "thorough") is None
        assert gate.before_inputs(s, dt, case.name, case.M, case.N, case.layout, "cpu") is None  # --case


def test_a_batch_judged_in_part_keeps_its_rows_places():
    """A large case judges a few rows of a huge batch; where the op depends on a row's place in the batch (softmax's
    causal mask and ALiBi: the query index is the row number), the reference takes the real row numbers, not 0..k-1
    (a correct masked softmax had a value finding at row 131072 of large_index_2pow31)."""
    from references import reference
    from verifier.judge import Criteria, judge
    from verifier.ops import get_op
    from verifier.spec import dtypes

    params = {**get_op("softmax").params, "causal": True}
    x = np.random.default_rng(0).standard_normal((12, 16)).astype(np.float32)
    whole = reference("softmax", {"x": x}, params, "float32").rounded["y"]
    rows = [0, 9, 11]
    verdict = judge(Criteria(op="softmax", dtypes=dtypes("f32"), params=params), {"x": x},
                    {"y": whole.astype(np.float32)}, rows=rows)
    assert verdict.ok, verdict.comparison


def test_a_large_case_drawing_past_its_share_of_host_memory_is_not_drawn(monkeypatch, registry):
    """An op's own maker may compute over the whole (M, N) x (rmsnorm_quant's static scale once did, 50 GB of float64
    at 2^31 elements, and ended a run by the kernel's OOM kill): the draw is capped, and past the cap the case is not
    run (DrawTooLarge) instead. Here the cap is 256 MB and the case rows_past_65535 (x: 537 MB of float64)."""
    from verifier.inputs import cases as C
    from verifier.ops import register
    from verifier.spec import Op, Tensor, TritonKernel, dtypes

    def whole_scale(rng, x, params, policy):  # reads every element of x
        return np.array([np.abs(np.asarray(x, dtype=np.float64)).max() + 1.0])

    op = register(Op("whole_scale", inputs={"x": "MxN", "s": Tensor("1", "scale", dtype="float32", make=whole_scale)},
                     outputs={"y": "MxN"}, reference=lambda i, p: {"y": i["x"]}))
    spec = TritonKernel(name="t", op=op.name, module="k.py", launcher="go", dtypes=[dtypes("f32")])
    dt = spec.dtypes[0]
    case = next(c for c in C.cases_for(spec, dt, "thorough") if c.name == "rows_past_65535")
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    monkeypatch.setattr(C, "DRAW_SHARE", (256 << 20) / physical)
    import resource

    before = resource.getrlimit(resource.RLIMIT_AS)
    with pytest.raises(C.DrawTooLarge, match="host memory"):
        C.draw(spec, dt, case, 0)
    assert resource.getrlimit(resource.RLIMIT_AS) == before  # the cap is lifted again


@pytest.mark.parametrize("path, name, tensor", [
    (os.path.join("kernels", "triton", "masked_softmax_spec.py"), "triton-masked-softmax", "mask"),
    (os.path.join("kernels", "torch", "spec.py"), "torch-ce-soft", "target"),
])
def test_an_ops_own_mn_maker_draws_sparse_rows_in_a_large_case(monkeypatch, path, name, tensor):
    """A softmax's (M, N) mask and a soft-label cross entropy's target come from the op's own maker; in a large case
    they are SparseRows like x (the judged rows drawn by the maker, a pattern elsewhere), not 17 GB of float64 each
    (16 parallel checks on the H200's 128 GB host ran out of memory): drawn under a 256 MB cap, and the judged
    rows keep the maker's contract (a mask keeps its last column, a target row sums to 1)."""
    from verifier.declare.registry import load_spec_file
    from verifier.inputs import cases as C
    from verifier.inputs.layouts import SparseRows, judged_rows

    specs = load_spec_file(os.path.join(ROOT, path))
    spec = next(k for k in specs if k.name == name)
    dt = spec.dtypes[0]
    case = next(c for c in C.cases_for(spec, dt, "thorough") if c.name == "large_index_2pow31")
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    monkeypatch.setattr(C, "DRAW_SHARE", (256 << 20) / physical)
    got = C.draw(spec, dt, case, 0)
    t = got[tensor]
    assert isinstance(t, SparseRows) and t.shape == got["x"].shape, type(t)
    M, N = t.shape
    rows = judged_rows(M, N, case.layout.wrap, case.layout.stride)
    assert sorted(t.rows) == rows.tolist()
    held = np.stack([t.rows[r] for r in rows.tolist()]).astype(np.float64)
    if tensor == "mask":
        assert (held[:, -1] == 0).all() and np.isneginf(held).any()
    else:
        assert np.allclose(held.sum(axis=1), 1.0, atol=1e-2)


def test_an_int8_output_holding_both_poisons_values_is_not_unwritten(interpreter):
    """The second poison confirms an unwritten element element by element on the judged rows: a row of 16384 int8
    values holds some 90s (the first poison's value) and some 60s (the second's) legitimately, and counted per row
    those read as unwritten (a false finding on every correct int8 quantizer's large case, on the GPU too). The
    static scale of rmsnorm_quant is calibrated on one row of the large case's stand-in x (a broadcast view), not
    on 2^31 elements of float64 arithmetic (50 GB: the case was not run before)."""
    from verifier.declare.registry import load_spec_file
    from verifier.results.options import Options
    from verifier.battery import check_kernel

    specs = {k.name: k for k in load_spec_file(os.path.join(ROOT, "kernels", "triton", "quant_spec.py"))}
    for name in ("triton-per-token-quant", "triton-rmsnorm-quant"):
        r = check_kernel(specs[name], Options(level="ci", device="cpu", case="large_index_2pow31", dtype="f32toi8"))
        assert r.verdict == "pass" and not r.findings, (name, [f.message for f in r.findings], r.notes)


GROUP_SCALES = '''
import triton
import triton.language as tl


@triton.jit
def group_quant(x_ptr, y_ptr, s_ptr, N, G: tl.constexpr):
    g = tl.program_id(0).to(tl.int64)  # group g of the flat x: elements g*G .. g*G+G-1, its scale at s_ptr + g
    offs = g * G + tl.arange(0, G)
    x = tl.load(x_ptr + offs)
    scale = tl.maximum(tl.max(tl.abs(x), 0), 1e-10) / 127.0
    tl.store(s_ptr + g, scale)
    tl.store(y_ptr + offs, tl.extra.cuda.libdevice.round(x / scale).to(tl.int8))


def launch(inputs, outputs, params, dt):  # scales laid out as allocated, (M, N / G) contiguous: asserted, not assumed
    x, y, s = inputs["x"], outputs["y"], outputs["scale"]
    assert x.is_contiguous() and y.is_contiguous() and s.is_contiguous(), (x.stride(), y.stride(), s.stride())
    group_quant[(x.numel() // params["group_size"],)](x, y, s, x.shape[1], G=params["group_size"])
'''


def test_a_large_cases_narrower_2d_output_is_laid_out_at_its_own_row_length(interpreter, tmp_path):
    """A per-group scale [M, N/G] in a large case had rows N apart (x's row length): SGLang's per-token-group int8
    quantizer, writing its scales contiguously as it allocates them, got false scale findings on every judged row."""
    from verifier.spec import Contracts, TritonKernel, dtypes

    path = tmp_path / "group_scales.py"
    path.write_text(GROUP_SCALES)
    spec = TritonKernel(name="group-quant-contiguous-scales", op="per_token_group_quant", module=str(path),
                        launcher="launch", dtypes=[dtypes("f32", "int8")], params={"rounding": "half_away"},
                        contracts=Contracts(layout="contiguous"))
    report = _check(spec, "large_index_2pow31")
    assert not report.findings and report.error is None and not _not_run(report, "large_index_2pow31"), \
        (report.findings, report.notes)
    assert report.verdict == "pass"

"""The large cases on aliased memory (issue #36), on a CPU: the plans (verifier.gpu.aliasing) at the real cases'
geometry, and the whole launch body (verifier.launch.large over verifier.gpu.vmm) on a fake driver whose
cuMemCreate / cuMemMap are memfd mappings, so aliased pages alias for real (tests/fake_libcuda.py).

What must hold: judged rows and guard bands lie on private chunks, each private allocation mapped once (no other
row's write can land on a judged output); a wrapped 32-bit offset of a judged row lands on other physical bytes
(aliasing cannot hide the wrap); every shared mapping maps a whole allocation (cuMemMap's offset must be 0); a
tensor costs tens of megabytes whatever its length."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from verifier.inputs import large_family as C
from verifier.inputs import layouts as L
from verifier.gpu import aliasing as A
from verifier.launch.large import ALIASED_TENSOR_BYTES
from verifier.launch.outcome import GUARD_BYTES

CHUNK, SHARED = 2 << 20, 16  # an H200's granularity and the shared allocation's chunks (verifier.gpu.vmm)


def _check_structure(plan: A.Plan):
    at = 0
    for p in plan.pieces:  # every chunk once, in order
        assert p.first == at and p.chunks > 0
        at += p.chunks
        if p.phys == A.SHARED:
            assert p.chunks == plan.shared_chunks  # a whole allocation: cuMemMap takes no offset
        elif p.phys == A.SHARED_ONE:
            assert p.chunks == 1
        else:
            assert p.chunks == plan.private[p.phys]
    assert at == plan.chunks
    privates = [p.phys for p in plan.pieces if p.private]
    assert sorted(privates) == list(range(len(plan.private)))  # each private allocation mapped exactly once


def test_plan_maps_every_chunk_once_and_each_allocation_whole():
    rng = np.random.default_rng(0)
    for _ in range(50):
        chunk, k = 4096, int(rng.integers(1, 6))
        n = int(rng.integers(8, 80)) * chunk - int(rng.integers(0, chunk))
        spans = [(int(s), int(rng.integers(1, 3 * chunk))) for s in rng.integers(0, n // 2, 4)]
        plan = A.plan(n, spans, chunk, k)
        _check_structure(plan)
        assert plan.nbytes >= n
        for s, m in spans:
            assert plan.is_private(s, m)
        shared = [c for c in range(plan.chunks) if not plan.private_chunk(c)]
        assert len(shared) + sum(plan.private) == plan.chunks
    with pytest.raises(ValueError, match="outside"):
        A.plan(4096, [(4000, 200)], 4096, 1)


def _large_cases():
    """The large family at the geometry each level runs (ci: rows up to 16384), in bf16 and f32."""
    return [C.large_case(16384), C.large_case(16384, 2 ** 32, C.LARGE_2POW32), C.large_case(152064),
            C.large_case(152064, 2 ** 32, C.LARGE_2POW32), C.rows_case(1024), C.stride_case(1024)]


@pytest.mark.parametrize("case", _large_cases(), ids=lambda c: f"{c.name}-{c.N}")
@pytest.mark.parametrize("itemsize", [2, 4])
def test_the_large_cases_judged_rows_are_private_and_wrapped_offsets_land_elsewhere(case, itemsize):
    stride = case.layout.stride or case.N
    judged = L.judged_rows(case.M, case.N, case.layout.wrap, case.layout.stride)
    for guard in (0, GUARD_BYTES):  # an input, an output between its guard bands
        plan = A.tensor_plan((case.M, case.N), stride, itemsize, judged, CHUNK, SHARED, guard)
        _check_structure(plan)
        assert plan.physical_bytes <= ALIASED_TENSOR_BYTES  # whatever the tensor's length
        assert plan.nbytes >= ((case.M - 1) * stride + case.N) * itemsize + 2 * guard
        if guard:
            assert plan.is_private(0, guard) and plan.is_private(plan.nbytes - plan.nbytes % CHUNK - 1, 1)
        for r in judged.tolist():
            own = guard + r * stride * itemsize
            assert plan.is_private(own, case.N * itemsize), r
            for width in (2 ** 31, 2 ** 32):  # signed and unsigned 32-bit offsets
                o = r * stride
                if o < width:
                    continue
                wrapped = (o + 2 ** 31) % 2 ** 32 - 2 ** 31 if width == 2 ** 31 else o % 2 ** 32
                if wrapped < 0:
                    continue  # before the range: an illegal address on the GPU (nothing is mapped there)
                where = guard + wrapped * itemsize
                assert plan.physical(where) != plan.physical(own), (r, width)  # other data: a wrong value
    # past the wrap: the cases hold the judged rows the issue asks for
    if case.name == C.ROWS_PAST_GRID_Y:
        assert case.M > L.GRID_Y and {L.GRID_Y - 1, L.GRID_Y, L.GRID_Y + 1} <= set(judged.tolist())
    elif case.name == C.ROW_STRIDE_2POW31:
        assert stride >= 2 ** 31 and judged.tolist() == list(range(case.M))
    else:
        w = case.layout.wrap
        assert case.M * case.N >= w + 2 * case.N and (w // case.N) in judged


# --- the launch body on a fake driver with real aliasing ----------------------------------------------------------
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fake driver's aliasing is memfd + mmap")
import ml_dtypes  # noqa: E402

from fake_libcuda import Illegal, install  # noqa: E402
from verifier.battery import gate  # noqa: E402
from verifier.battery.values import run_case  # noqa: E402
from verifier.gpu import libcuda as cd  # noqa: E402
from verifier.inputs.cases import draw  # noqa: E402
from verifier.launch.harness import KernelFault  # noqa: E402
from verifier.results.kernel import KernelReport  # noqa: E402
from verifier.results.options import Options  # noqa: E402
from verifier.spec import CudaKernel, Launch, Stride, dtypes  # noqa: E402

BF16 = dtypes("bf16")
W = 2 ** 20  # the simulated 2^31: 1112 rows of 1000 bf16, 34 chunks of 64 KiB
G = 1 << 16  # the fake driver's granularity (larger than the 32 KiB bf16 pattern, which must divide it)
ARGS = ("x", "w", "y", "M", "N", Stride("x", "int64"), Stride("y", "int64"), "eps")


def _rms(offset):
    """RMSNorm over (x, w, y, M, N, sx, sy, eps) in bf16, row r at element offset(r, stride) (a negative one: an
    illegal address, as before any allocation on a GPU)."""
    def kernel(lib, a):
        x, w, y, M, N, sx, sy, eps = a
        io = ml_dtypes.bfloat16
        wv = lib.view(w, io, N).astype(np.float32)
        for r in range(M):
            ox, oy = offset(r, sx), offset(r, sy)
            if ox < 0 or oy < 0:
                raise Illegal(f"row {r} at a negative offset")
            xr = lib.view(x + ox * 2, io, N).astype(np.float32)
            rstd = np.float32(1) / np.sqrt((xr * xr).mean(dtype=np.float32) + np.float32(eps))
            lib.view(y + oy * 2, io, N)[:] = (xr * rstd * wv).astype(io)
    return kernel


KERNELS = {
    "ok_bf16": _rms(lambda r, s: r * s),
    "int_bf16": _rms(lambda r, s: (r * s + W) % (2 * W) - W),  # `int base = row * N` at a W-wide int
    "unsigned_bf16": _rms(lambda r, s: (r * s) % (2 * W)),  # `unsigned base = row * N`, wrapping at 2W
    "narrow_stride_bf16": _rms(lambda r, s: r * ((s + W) % (2 * W) - W)),  # the stride narrowed to a W-wide int
}


@pytest.fixture
def vmm_lib(monkeypatch):
    from verifier.gpu import probe, vmm

    probe.driver_device_count.cache_clear()
    lib = install(KERNELS, monkeypatch.setattr)
    lib.enable_vmm(G)
    monkeypatch.setattr(vmm, "SHARED_BYTES", 4 * G)  # shared runs of 4 chunks and one-chunk leftovers
    yield lib
    cd._primary.cache_clear()
    probe.driver_device_count.cache_clear()
    probe.capability.cache_clear()


def _spec(entry, grid_y=False):
    def launches(M, N, dt, p):
        return [Launch(f"{entry}_{dt.tag}", grid=(1, M) if grid_y else (M,), block=(32,), args=ARGS)]
    return CudaKernel(name=f"emu-{entry}".replace("_", "-") + ("-grid-y" if grid_y else ""), op="rmsnorm",
                      source="emulated.cu", dtypes=[BF16], launches=launches)


def _checks(spec, case) -> set:
    report = KernelReport(spec=spec, device="cuda")
    try:
        run_case(spec, BF16, case.name, draw(spec, BF16, case, 0), Options(device="cuda"), report,
                 layout=case.layout)
    except KernelFault:
        pass
    return report


def _stride_case():
    stride = W + L.ROW_PAD
    return C.Case(C.ROW_STRIDE_2POW31, "simulated", 4, 1000, C.sparse_maker(4, 1000, W, stride),
                  layout=L.Layout(L.LARGE, W, stride))


@linux
@pytest.mark.parametrize("entry, case, expect", [
    ("ok", C.large_case(1000, W), set()),
    ("int", C.large_case(1000, W), {"crash"}),
    ("ok", C.large_case(1000, 2 * W, C.LARGE_2POW32), set()),
    ("int", C.large_case(1000, 2 * W, C.LARGE_2POW32), {"crash"}),
    ("unsigned", C.large_case(1000, W), set()),  # right below its wrap
    ("unsigned", C.large_case(1000, 2 * W, C.LARGE_2POW32), {"value"}),  # read and written onto earlier rows
    ("ok", "stride", set()),
    ("narrow_stride", "stride", {"crash"}),
    ("narrow_stride", C.large_case(1000, W), set()),  # contiguous rows: right
])
def test_large_cases_on_aliased_pages_catch_each_offset_bug(vmm_lib, entry, case, expect):
    case = _stride_case() if case == "stride" else case
    report = _checks(_spec(entry), case)
    got = {f.check for f in report.findings}
    assert expect <= got and (got == set() if not expect else True), [f.message[:300] for f in report.findings]
    assert "cuMemMap" in vmm_lib.calls and "cuMemSetAccess" in vmm_lib.calls
    span = ((case.M - 1) * (case.layout.stride or case.N) + case.N) * 2
    assert sum(vmm_lib.vmm.created) < span  # x and y together: under the size of one of them
    assert max(vmm_lib.vmm.created) <= 4 * G  # the shared allocation, or a short run of private chunks
    assert any(m == 4 * G for m in vmm_lib.vmm.mapped) and any(m == G for m in vmm_lib.vmm.mapped)
    for f in report.findings:
        assert ("a 32-bit" in f.message or "unsigned" in f.message or "stride" in f.message), f.message


@linux
def test_on_aliased_pages_a_skipped_judged_row_is_unwritten_and_others_are_not_counted(vmm_lib, monkeypatch):
    case = C.large_case(1000, W)
    judged = L.judged_rows(case.M, case.N, W).tolist()
    for skip, expect in ((judged[2], {"unwritten"}), (300, set())):  # row 300 lies on shared chunks: not judged
        def kernel(lib, a, skip=skip):
            keep = lib.view(a[2] + skip * a[6] * 2, np.int16, a[4]).copy()
            KERNELS["ok_bf16"](lib, a)
            lib.view(a[2] + skip * a[6] * 2, np.int16, a[4])[:] = keep

        monkeypatch.setitem(vmm_lib.kernels, "skip_bf16", kernel)
        report = _checks(_spec("skip"), case)
        checks = {f.check for f in report.findings}
        assert expect <= checks and (checks == set() if not expect else True)  # the poison: nan-inf too
        if expect:
            unwritten = next(f for f in report.findings if f.check == "unwritten")
            assert f"first in row {skip}" in unwritten.message


@linux
def test_rows_on_grid_y_do_not_launch_past_its_limit(vmm_lib, monkeypatch):
    import fake_libcuda

    monkeypatch.setattr(L, "GRID_Y", 100)  # a simulated 65,535: the case and the fake driver's limit
    monkeypatch.setattr(fake_libcuda, "GRID_YZ", 100)
    case = C.rows_case(1000)
    assert case.M == 165 and {99, 100, 101} <= set(L.judged_rows(case.M, case.N, case.layout.wrap).tolist())
    assert not _checks(_spec("ok"), case).findings
    bad = _checks(_spec("ok", grid_y=True), case).findings
    assert [f.check for f in bad][:1] == ["crash"] and "CUDA_ERROR_INVALID_VALUE" in bad[0].message
    assert "more than 100 rows: rows launched on grid.y" in bad[0].message


def test_a_launch_passing_an_int32_stride_is_not_given_rows_2pow31_apart():
    narrow = CudaKernel(name="n", op="rmsnorm", source="emulated.cu", dtypes=[BF16],
                        launches=lambda M, N, dt, p: [Launch("ok_bf16", grid=(M,), block=(32,),
                                                             args=("x", "w", "y", "M", "N", "x.stride", "y.stride",
                                                                   "eps"))])
    case = C.stride_case(1024)
    closed = gate.before_inputs(narrow, BF16, case.name, case.M, case.N, case.layout, "cuda")
    assert closed.kind == gate.CONTRACT and "row stride of x, y as int32" in closed.text
    wide = _spec("ok")
    assert gate.narrow_stride(wide, case.M, case.N, BF16) is None
    cpu = gate.before_inputs(wide, BF16, case.name, case.M, case.N, case.layout, "cpu")
    assert cpu.kind == gate.DEVICE and "this run is on cpu" in cpu.text


def test_rows_a_stride_apart_on_torch_tensors_of_the_cpu():
    """The torch side of the stride case (plain tensors here, a simulated stride): the callable gets x as a strided
    view; one that reads row r at r * N is caught, torch's own softmax is not."""
    import torch

    from verifier.spec import CallableKernel

    def softmax(inputs, outputs, params, dt):
        assert inputs["x"].stride(0) == W + L.ROW_PAD
        outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))

    def flat_rows(inputs, outputs, params, dt):  # the row stride ignored
        x = inputs["x"]
        outputs["y"].copy_(torch.softmax(x.as_strided(x.shape, (x.shape[1], 1)).float(), -1))

    case = _stride_case()
    found = {}
    for fn in (softmax, flat_rows):
        spec = CallableKernel(name=fn.__name__.replace("_", "-"), op="softmax", fn=fn, dtypes=[BF16])
        found[fn.__name__] = {f.check for f in run_case(spec, BF16, case.name, draw(spec, BF16, case, 0),
                                                        Options(device="cpu"), layout=case.layout).findings}
    assert found == {"softmax": set(), "flat_rows": found["flat_rows"]} and "value" in found["flat_rows"]


def test_suites_on_a_gpu_run_the_large_cases_but_not_under_compute_sanitizer(monkeypatch):
    from types import SimpleNamespace
    from pathlib import Path

    from verifier.declare.registry import load_spec_file
    from verifier.gpu import probe
    from verifier.launch import large
    from verifier.plugin import session

    monkeypatch.setattr(large, "aliased", lambda: True)  # a GPU with the virtual memory API and the memory
    monkeypatch.setattr(probe, "free_memory", lambda: 100e9)
    spec = Path(__file__).resolve().parents[1] / "kernels" / "cuda" / "softmax_spec.py"
    kernels = [k for k in load_spec_file(spec) if k.name == "cuda-softmax-s3"]
    v = {"device": "auto", "resolved": "cuda", "level": "ci", "seed": 0, "kernels": kernels, "sanitize": True,
         "tools": ["memcheck"], "globs": [], "specs": []}
    before = session.NOT_GENERATED[session.LARGE_NOT_SANITIZED]
    ids = [p.id for p in session.suite_params(SimpleNamespace(_verifier=v), "softmax", session.PARAMS, "values")]
    large_ids = [i for i in ids if any(i.endswith(f"-{c}") for c in C.LARGE_CASES)]
    assert len(large_ids) >= 3 and not [i for i in ids if any(f"-{c}-" in i for c in C.LARGE_CASES)]
    assert session.NOT_GENERATED[session.LARGE_NOT_SANITIZED] - before == len(large_ids)
    assert "cuda-softmax-s3-f32-normal_small-memcheck" in ids

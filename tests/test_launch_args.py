"""C-ABI launch arguments (verifier.declare.args) and launch validation without a GPU (verifier.battery.launch_check):
structs passed by value in C layout, null and offset pointers, every C scalar kind, each checked against the PTX
parameter list of a real kernel (tests/data/cabi/args.cu, built by the local nvcc); grids, blocks, shared memory,
tensor names and strides checked at the shapes the battery uses; a five-parameter launches() sees the tensors'
alignment and strides, so the unaligned case runs the scalar path a caller gets."""
from __future__ import annotations

import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from verifier.battery import launch_check
from verifier.battery.build import check_build
from verifier.declare.args import LaunchLayout, alignment_of
from verifier.declare.registry import load_spec_file
from verifier.errors import SpecError
from verifier.inputs import layouts as L
from verifier.launch import cuda as rc
from verifier.results.options import Options
from verifier.spec import CudaKernel, Launch, Pointer, Scalar, Stride, Struct, Workspace, dtypes

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "cabi"
SOURCE = str(DATA / "args.cu")
F32 = dtypes("f32")
CPU = Options(device="cpu")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc to build tests/data/cabi/args.cu")


def _p(N=8, eps=1e-6):  # the spelling
    return Struct([("ptr", "x"), ("ptr", "y"), ("uint32", N), ("float32", eps)])


# --- declarations: C layout, kinds, ranges ------------------------------------------------------------------------
def test_struct_follows_the_c_layout_rules():
    p = _p()
    assert (p.nbytes, p.align) == (24, 8) and [o for o, _, _ in p.leaves()] == [0, 8, 16, 20]
    div = Struct([("uint32[3]", (1, 2, 3))])
    assert (div.nbytes, div.align) == (12, 4)
    # struct R { char a; short b; Div dv; double z; P p; }: as nvcc lays it out (.align 8 .b8 [48])
    r = Struct([("int8", 1), ("int16", 2), ("struct", div), ("float64", 1.0), ("struct", p)])
    assert (r.nbytes, r.align) == (48, 8)
    assert [o for o, _, _ in r.leaves()] == [0, 2, 4, 8, 12, 16, 24, 32, 40, 44]
    a16 = Struct([("float32", 1.0)], align=16)  # struct __align__(16) { float a; }
    assert (a16.nbytes, a16.align) == (16, 16)
    assert (Struct([("bool", True), ("uint64", 1)]).nbytes, Struct([("uint16", 1), ("int8", 1)]).nbytes) == (16, 4)
    assert p.describe() == "struct {ptr x, ptr y, uint32 8, float32 1e-06} (24 bytes, align 8)"
    assert (Struct([]).nbytes, Struct([]).align, Struct([]).leaves()) == (1, 1, [])  # struct Identity {}: 1 byte


def test_ptx_parameter_lists_in_every_form_nvvm_writes():
    from verifier.toolchain.entry_params import parse

    ptx = """
.weak .entry _Z1kI2IdEvPfT_i(
	.param .u64 _Z1kI2IdEvPfT_i_param_0,
	.param .align 1 .b8 _Z1kI2IdEvPfT_i_param_1[1],
	.param .u32 _Z1kI2IdEvPfT_i_param_2
)
.visible .entry g(
	.param .u64 .ptr .global .align 4 g_param_0,
	.param .s32 g_param_1,
	.param .f64 g_param_2,
	.param .align 16 .b8 g_param_3[48]
)
{
	ld.param.u64 	%rd1, [g_param_0];
}
.visible .entry none()
{
	ret;
}
"""
    got = {k: [(p.type, p.size, p.align, p.array) for p in v] for k, v in parse(ptx).items()}
    assert got == {"_Z1kI2IdEvPfT_i": [("u64", 8, 8, False), ("b8", 1, 1, True), ("u32", 4, 4, False)],
                   "g": [("u64", 8, 8, False), ("s32", 4, 4, False), ("f64", 8, 8, False), ("b8", 48, 16, True)],
                   "none": []}


@pytest.mark.parametrize("fields, kw, words", [
    ([("float16", 1)], {}, "not a C type"),
    ([("uint8", 256)], {}, "out of range for uint8"),
    ([("uint32[3]", (1, 2))], {}, "an array of 3 takes a sequence of 3"),
    ([("uint9[2]", (1, 2))], {}, "'uint9' is not a C scalar type"),
    ([("ptr", 5)], {}, "a 'ptr' member takes"),
    ([("uint32", Struct([("uint32", 1)]))], {}, "declared with ctype 'struct'"),
    ([("struct", 3)], {}, "is a Struct"),
    ([("uint64", 1)], {"align": 4}, "cannot lower it"),
    ([("uint64", 1)], {"align": 24}, "power of two"),
    ([("uint32",)], {}, "not a (ctype, value) pair"),
])
def test_a_malformed_struct_is_a_spec_error_that_says_why(fields, kw, words):
    with pytest.raises(SpecError, match=words.replace("(", r"\(").replace(")", r"\)")):
        Struct(fields, **kw)


def test_every_c_scalar_kind_and_its_range():
    for kind, ok, bad in [("bool", True, 2), ("int8", -128, 128), ("uint8", 255, -1), ("int16", -32768, 32768),
                          ("uint16", 65535, 65536), ("int32", -2 ** 31, 2 ** 31), ("uint32", 2 ** 32 - 1, -1),
                          ("int64", -2 ** 63, 2 ** 63), ("uint64", 2 ** 64 - 1, 2 ** 64),
                          ("float32", 3.0e38, 3.5e38), ("float64", 1e308, "x")]:
        assert Scalar(kind, ok).nbytes == np.dtype(kind if kind != "bool" else "bool").itemsize
        with pytest.raises(SpecError, match="out of range|not a bool|not a value of C type float64"):
            Scalar(kind, bad)
    with pytest.raises(SpecError, match="bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, float32"):
        Scalar("half", 1)
    with pytest.raises(SpecError, match="not a value of C type int32"):
        Scalar("int32", 1.5)
    assert Scalar("int64", "M").describe() == "int64 M"  # bound per call


def test_pointers_null_and_offset():
    assert Pointer(None).describe() == "ptr null" and Pointer("x", offset=3).describe() == "ptr x+3"
    with pytest.raises(SpecError, match="a null pointer has no offset"):
        Pointer(None, offset=1)
    with pytest.raises(SpecError, match="a count of elements"):
        Pointer("x", offset=1.5)


def _spec(launches, op="softmax", name="cabi"):
    return CudaKernel(name=name, op=op, source=SOURCE, launches=launches, dtypes=[F32])


def test_a_struct_is_packed_as_the_kernel_reads_it():
    spec = _spec(lambda M, N, dt, p: [Launch("k", grid=(M,), block=(256,), args=(_p(N, p["eps"]),))], op="rmsnorm")
    (launch,) = rc.launches_for(spec, 2, 8, F32, spec.op_params())
    x, y = 0x7000_0000_1000, 0x7000_0000_2000
    (raw,) = rc.bind_args(spec, launch, 2, 8, spec.op_params(), {"x": np.uint64(x), "w": np.uint64(0),
                                                                 "y": np.uint64(y)}, None)
    assert raw == struct.pack("<QQIf", x, y, 8, np.float32(spec.op_params()["eps"]))
    # the echo kernel's struct: pointers (one 3 elements in, one null), a nested uint3 pack and int8, a double,
    # a uint16 and a uint64, aligned to 16 (64 bytes)
    sys.path.insert(0, str(DATA))
    try:
        import args_spec
    finally:
        sys.path.remove(str(DATA))
    e = args_spec.echo_struct(40)
    launch = Launch("echo", grid=(1,), block=(1,), args=(e, Scalar("bool", True), Scalar("int8", -1),
                                                         Scalar("float64", 0.25), Pointer(None)))
    raw, b, i8, f64, null = rc.bind_args(spec, launch, 1, 40, {}, {"x": np.uint64(x), "y": np.uint64(y)}, None,
                                         extents={"x": (40, 4), "y": (40, 4)})
    assert raw == struct.pack("<QQQIIIb3xdH6xQ", x, x + 12, 0, 7, 2 ** 32 - 1, 40, -5, -2.5e300, 65535, 2 ** 64 - 2)
    assert (b.dtype, i8.dtype, f64.dtype, null) == (np.bool_, np.int8, np.float64, np.uint64(0))


# --- against the compiled entry's PTX parameters --------------------------------------------------------------------
def _build_findings(spec):
    report = check_build(spec, CPU, spec.dtypes)
    return [f.message for f in report.findings if f.check == "build"], report


@needs_nvcc
def test_every_argument_kind_matches_the_ptx_parameters_of_its_entry():
    from verifier.toolchain.entry_params import entry_params
    from verifier.toolchain.nvcc import compile_ptx

    params = entry_params(compile_ptx(Path(SOURCE), arch="sm_80"))
    assert [p.describe() for p in params["k"]] == ["24 bytes align 8"]
    assert [p.describe() for p in params["packs"]] == ["u64", "u64", "12 bytes align 4", "16 bytes align 16"]
    assert [p.describe() for p in params["echo"]][:2] == ["64 bytes align 16", "u8"] and len(params["echo"]) == 15
    assert [p.describe() for p in params["scalars"]] == ["u8", "u8", "u8", "u16", "u16", "u32", "u32", "u64", "u64",
                                                         "f32", "f64", "u64", "u64"]
    specs = load_spec_file(str(DATA / "args_spec.py"))
    assert {k.name for k in specs} == {"cabi-struct-p", "cabi-scalars", "cabi-packs", "cabi-functor", "cabi-echo"}
    for spec in specs:
        found, report = _build_findings(spec)
        assert found == [], (spec.name, found)
        assert report.verdict == "pass" and report.cells[("f32", "build")].status == "pass"


SCALARS = (Scalar("bool", True), Scalar("int8", -1), Scalar("uint8", 1), Scalar("int16", -1), Scalar("uint16", 1),
           Scalar("int32", -1), Scalar("uint32", 1), Scalar("int64", -1), Scalar("uint64", 1), Scalar("float32", 1.0),
           Scalar("float64", 1.0), "x", "y")


def _swap(args, i, new):
    return args[:i] + (new,) + args[i + 1:]


@needs_nvcc
@pytest.mark.parametrize("entry, args, words", [
    ("scalars", _swap(SCALARS, 7, Scalar("int32", -1)),
     "argument 7 (int32 -1) is 4 bytes but parameter 7 of scalars is 8 bytes (u64)"),
    ("scalars", _swap(SCALARS, 9, Scalar("int32", 1)),
     "argument 9 (int32 1) goes to a floating-point parameter 9 of scalars (f32)"),
    ("scalars", _swap(SCALARS, 0, Scalar("int32", 1)), "argument 0 (int32 1) is 4 bytes but parameter 0 of scalars is 1 bytes (u8)"),
    ("scalars", SCALARS[:-1], "passes 12 arguments (bool True, int8 -1,"),
    ("packs", ("x", "y", Struct([("uint32[2]", (1, 2))]), Struct([("float32", 1.0)], align=16)),
     "argument 2 (struct {uint32[2] {1, 2}} (8 bytes, align 4)) is 8 bytes but parameter 2 of packs is 12 bytes"),
    ("packs", ("x", "y", Struct([("uint32[3]", (1, 2, 3))]), Struct([("float32", 1.0)] * 4)),
     "is aligned to 4 bytes but parameter 3 of packs to 16"),
    ("packs", ("x", "y", Struct([("uint32[3]", (1, 2, 3))]), Struct([("float32", 1.0)])),
     "argument 3 (struct {float32 1.0} (4 bytes, align 4)) is 4 bytes but parameter 3 of packs is 16 bytes"),
    ("k", (Struct([("ptr", "x"), ("ptr", "y")]),), "is 16 bytes but parameter 0 of k is 24 bytes (24 bytes align 8)"),
    ("k", (Pointer("x"),), "argument 0 (ptr x) is 8 bytes but parameter 0 of k is 24 bytes"),
])
def test_arguments_that_do_not_match_the_entry_are_a_build_finding_naming_both_lists(entry, args, words):
    spec = _spec(lambda M, N, dt, p: [Launch(entry, grid=(M,), block=(32,), args=args)])
    found, report = _build_findings(spec)
    assert len(found) == 1 and words in found[0], found
    assert "vs parameters (" in found[0] or "but " + entry + " takes" in found[0]
    assert found[0].startswith("[sm_80, sm_90] launch 0 of entry " + entry)
    assert "(at M=4, N=1, f32, contiguous layout; and " in found[0] and "\n  fix: " in found[0]
    assert report.verdict == "fail" and report.cells[("*", "build")].status == "FAIL"


@needs_nvcc
def test_five_arguments_to_an_eight_parameter_kernel_fail_verifier_check_on_the_cpu():
    out = subprocess.run([sys.executable, "-m", "verifier.cli", "check", str(DATA / "mismatch_spec.py"),
                          "--device", "cpu"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 1, out.stdout + out.stderr
    assert ("launch 0 of entry eight passes 5 arguments (ptr x, ptr w, ptr y, int32 M, float32 eps) but eight takes "
            "8 parameters (u64, u64, u64, u32, u32, u32, f32, u64)") in out.stdout
    assert "Traceback" not in out.stdout + out.stderr


# --- launch validation at the battery's shapes ----------------------------------------------------------------------
EIGHT = ("x", "w", "y", "M", "N", "N", "eps", Pointer(None))


def _eight(**kw):
    args = kw.pop("args", EIGHT)
    grid = kw.pop("grid", lambda M: (M,))
    return _spec(lambda M, N, dt, p: [Launch("eight", grid=grid(M), args=args, **{"block": (256,), **kw})],
                 op="rmsnorm")


@needs_nvcc
@pytest.mark.parametrize("spec, words", [
    (_eight(args=_swap(EIGHT, 1, "q")), "launch 0 of entry eight has argument 'q'"),
    (_eight(block=(2048,)), "block (2048,) has 2048 threads; a block holds at most 1024"),
    (_eight(block=(1, 1, 128)), "block (1, 1, 128): dimension z is 128; it must be 1 .. 64"),
    (_eight(block=(16, 2048)), "block (16, 2048) has 32768 threads"),
    (_eight(block=(0, 4)), "block (0, 4): dimension x is 0; it must be 1 .. 1024"),
    (_eight(grid=lambda M: (M - 10,)), "grid (-6,): dimension x is -6; it must be 1 .. 2147483647"),
    (_eight(grid=lambda M: (0,)), "grid (0,): dimension x is 0"),
    (_eight(grid=lambda M: (1, 70000)), "grid (1, 70000): dimension y is 70000; it must be 1 .. 65535"),
    (_eight(grid=lambda M: (1, 1, 65536)), "dimension z is 65536"),
    (_eight(grid=lambda M: (2 ** 31,)), "dimension x is 2147483648"),
    (_eight(grid=lambda M: M), "grid 4 is not 1 to 3 whole numbers"),
    (_eight(block=(32, 1.5)), "block (32, 1.5) is not 1 to 3 whole numbers"),
    (_eight(smem=1 << 30), "[sm_90] launch 0 of entry eight asks for 1073741824 bytes of dynamic shared memory; sm_90 "
                           "allows at most 232448 bytes per block"),
    (_eight(smem=200 * 1024), "[sm_80] launch 0 of entry eight asks for 204800 bytes of dynamic shared memory; sm_80 "
                              "allows at most 166912 bytes per block"),
    (_eight(args=_swap(EIGHT, 5, "w.stride")), "passes the row stride of 'w', which is not a 2-D tensor of the op"),
    (_eight(args=_swap(EIGHT, 5, Stride("q"))), "passes the row stride of 'q', which is not a 2-D tensor of the op"),
    (_eight(args=_swap(EIGHT, 7, Pointer("w", offset=1024))), "passes ptr w+1024: offset 1024 is outside 'w', which "
                                                              "holds 1 elements at M=4, N=1"),
    (_eight(args=_swap(EIGHT, 5, Scalar("int32", "eps"))), "1e-06 is not a value of C type int32"),
    (_eight(args=_swap(EIGHT, 7, Workspace("ws", lambda M, N: M - 5))), "Workspace 'ws': count(4, 1) gave -1 elements"),
    (_eight(args=_swap(EIGHT, 4, Scalar("int16", "N"))), "65537 is out of range for int16"),
    (_eight(args=_swap(EIGHT, 0, 3)), "has argument 3: launch argument 3 (int) is not a launch argument"),
])
def test_a_launch_that_cannot_run_is_a_build_finding_without_a_gpu(spec, words):
    found, report = _build_findings(spec)
    assert any(words in f for f in found), found
    assert report.verdict == "fail" and report.cells[("*", "build")].status == "FAIL"


@needs_nvcc
def test_launch_validation_reaches_the_case_shapes_not_only_the_probes():
    # 400 threads at M = 4 (every probe row length), 1300 at the catalogue's 13-row case
    spec = _spec(lambda M, N, dt, p: [Launch("eight", grid=(M,), block=(100 * M,), args=EIGHT)], op="rmsnorm")
    found, _ = _build_findings(spec)
    assert len(found) == 2 and "block (1300,) has 1300 threads" in found[0], found
    assert "(at M=13, N=96, f32, contiguous layout)" in found[0]
    assert "(at M=65600, N=1024, f32, large layout)" in found[1]  # rows_past_65535, a ci shape too (issue #36)


@needs_nvcc
def test_a_valid_launch_of_the_same_entry_has_no_finding():
    assert _build_findings(_eight())[0] == [] and _build_findings(_eight(smem=160 * 1024))[0] == []


def test_smem_limits_come_from_the_arch():
    assert launch_check.smem_optin("sm_80") == 163 * 1024 and launch_check.smem_optin("sm_90a") == 227 * 1024
    assert launch_check.smem_optin("sm_89") == 99 * 1024 and launch_check.smem_optin("sm_60") is None


def test_a_raising_launches_stays_the_kernels_error():
    from verifier.battery import check_kernel

    def boom(M, N, dt, params):
        raise ValueError("no launch for you")

    report = check_kernel(_spec(boom), CPU)
    assert report.verdict == "error" and "no launch for you" in report.error


# --- launches(M, N, dt, params, layout) -----------------------------------------------------------------------------
def _dispatch(M, N, dt, params, layout):
    vec = layout.aligned(16) and N % 4 == 0  # the usual host test: every pointer 16-byte aligned
    return [Launch("vec4_f32" if vec else "scalar_f32", grid=(M,), block=(32,),
                   args=("x", "y", "M", "N", Scalar("int32", layout.stride("x"))))]


def test_the_layout_gives_alignment_and_row_stride():
    spec = _spec(_dispatch, name="dispatch")
    contiguous = rc.model_layout(spec, 4, 64, F32, {}, L.CONTIGUOUS)
    assert (contiguous.alignment("x"), contiguous.stride("x"), contiguous.stride("y")) == (256, 64, 64)
    unaligned = rc.model_layout(spec, 4, 64, F32, {}, L.UNALIGNED)
    assert (unaligned.alignment("x"), unaligned.alignment("y"), unaligned.aligned(16)) == (4, 4, False)
    assert [l.entry for l in rc.launches_for(spec, 4, 64, F32, {}, contiguous)] == ["vec4_f32"]
    assert [l.entry for l in rc.launches_for(spec, 4, 64, F32, {}, unaligned)] == ["scalar_f32"]
    assert [l.entry for l in rc.launches_for(spec, 4, 64, F32, {})] == ["vec4_f32"]  # no tensors: contiguous
    assert (alignment_of(0x1000), alignment_of(0x1004), alignment_of(0x1010)) == (256, 4, 16)
    norm = rc.model_layout(_eight(), 4, 64, F32, {"eps": 1e-6}, L.CONTIGUOUS)
    with pytest.raises(SpecError, match="'w' is not a 2-D tensor: it has no row stride"):
        norm.stride("w")
    with pytest.raises(SpecError, match="'q' is not a tensor of op rmsnorm"):
        norm.alignment("q")
    four = _spec(lambda M, N, dt, p: [Launch("vec4_f32", grid=(M,), block=(32,), args=("x", "y"))])
    assert [l.entry for l in rc.launches_for(four, 4, 64, F32, {}, unaligned)] == ["vec4_f32"]  # unchanged
    assert rc.takes_layout(_dispatch) and not rc.takes_layout(lambda M, N, dt, p: []) \
        and not rc.takes_layout(lambda *a: [])  # a bare *args wrapper is called with four, as before


def test_the_build_step_and_lint_see_both_paths_of_a_host_dispatch():
    from verifier.lint.step import launch_facts

    spec = _spec(_dispatch, name="dispatch")
    assert {l.entry for ev in launch_check.evaluate(spec, [F32], "ci") for l in ev.launches} == {"vec4_f32",
                                                                                                 "scalar_f32"}
    assert set(launch_facts(spec, [F32])) == {"vec4_f32", "scalar_f32"}
    four = _spec(lambda M, N, dt, p: [Launch("vec4_f32", grid=(M,), block=(32,), args=("x", "y"))])
    assert set(launch_facts(four, [F32])) == {"vec4_f32"}


# the fake driver (tests/fake_libcuda.py): the unaligned case runs the path the dispatch picks for its pointers
def _copy(lib, a, vector):
    x, y, M, N, sx = a
    if vector and (x % 16 or y % 16):
        from fake_libcuda import Misaligned

        raise Misaligned()
    for r in range(M):  # y = x, row by row at x's stride (values are not judged here)
        lib.view(y + r * N * 4, np.float32, N)[:] = lib.view(x + r * sx * 4, np.float32, N)


@pytest.fixture
def lib(monkeypatch):
    from fake_libcuda import install
    from verifier.gpu import libcuda as cd

    fake = install({"vec4_f32": lambda lib, a: _copy(lib, a, True), "scalar_f32": lambda lib, a: _copy(lib, a, False)},
                   monkeypatch.setattr)
    yield fake
    cd._primary.cache_clear()


def test_the_unaligned_case_runs_the_scalar_path_a_caller_gets(lib):
    from verifier.launch.harness import execute

    spec = _spec(_dispatch, name="dispatch")
    xs = {"x": np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)}
    execute(rc.run_cuda, spec, xs, F32, {}, "cuda", layout=L.Layout(L.UNALIGNED), check_poison=False)
    assert [l.entry for l in lib.launched] == ["scalar_f32"]
    execute(rc.run_cuda, spec, xs, F32, {}, "cuda", check_poison=False)
    assert [l.entry for l in lib.launched] == ["scalar_f32", "vec4_f32"]
    # the strided case: launches() reads x's stride from the layout, so x gets rows N + 64 apart and that stride
    assert rc.strided_tensors(spec, 4, 64, F32, {}) == {"x"}
    execute(rc.run_cuda, spec, xs, F32, {}, "cuda", layout=L.Layout(L.STRIDED), check_poison=False)
    assert lib.launched[-1].entry == "vec4_f32" and lib.launched[-1].values()[-1] == 64 + L.ROW_PAD


def test_a_launch_layout_names_its_tensors():
    layout = LaunchLayout({"x": 16}, {"x": 80})
    assert layout.tensors == ("x",) and layout.aligned(16) and not layout.aligned(32)


# the echo round trip on the fake driver: every argument kind bound, packed and passed through cuLaunchKernel's
# parameter array; the emulated kernel reads the struct with the C layout of args.cu's Echo (the GPU test,
# tests/test_launch_args_gpu.py, runs the real one)
def _echo(lib, a):
    e, b, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64, xoff, null, y = a
    ex, exoff, enull, d0, d1, d2, tag, d, h, u = struct.unpack("<QQQIIIb3xdH6xQ", e)

    def words(fmt, v):
        return list(np.frombuffer(struct.pack("<" + fmt, v), dtype=np.uint32))

    out = [(exoff - ex) // 4, int(enull == 0), d0, d1, d2, tag & 0xFFFFFFFF] + words("d", d) + [h] + words("Q", u)
    out += [int(b)] + [v & 0xFFFFFFFF for v in (i8, u8, i16, u16, i32, u32)] + words("q", i64) + words("Q", u64)
    out += words("f", f32) + words("d", f64)
    out += [(xoff - ex) // 4, int(null == 0), int(lib.view(xoff, np.uint32, 1)[0]), len(e)]
    lib.view(y, np.uint32, len(out))[:] = out


def test_every_argument_kind_round_trips_through_the_launch_path(monkeypatch):
    from fake_libcuda import install
    from verifier.gpu import libcuda as cd
    from verifier.launch.harness import execute

    install({"echo": _echo}, monkeypatch.setattr)
    try:
        (spec,) = [k for k in load_spec_file(str(DATA / "args_spec.py")) if k.name == "cabi-echo"]
        x = np.arange(80, dtype=np.float32).reshape(2, 40) + np.float32(0.5)
        out = execute(rc.run_cuda, spec, {"x": x}, F32, spec.op_params(), "cuda", check_poison=False)
    finally:
        cd._primary.cache_clear()
    got = [int(w) for w in np.ascontiguousarray(out.outputs["y"]).reshape(-1).view(np.uint32)[:29]]
    sys.path.insert(0, str(DATA))
    try:
        from args_spec import echo_words
    finally:
        sys.path.remove(str(DATA))
    assert got == echo_words(x, 40)

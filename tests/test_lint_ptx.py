"""The PTX parser and CFG of verifier.lint on real nvcc output: the catalogue's sync defects, the bundled
all-reduce and cub kernels (inline-asm scopes), every kernel of the repository and FlashInfer's norms when the
package is installed, compiled with the local nvcc through verifier.toolchain.nvcc.compile_ptx."""
import functools
from pathlib import Path

import pytest

from verifier.errors import ToolMissing
from verifier.lint import ptx
from verifier.lint.cfg import CFG

ROOT = Path(__file__).resolve().parents[1]
SYNC = ROOT / "kernels/defects/cuda/sync_defects.cu"


def _flashinfer_include():
    """The include directory of the installed flashinfer-python wheel's headers, or None."""
    import importlib.util

    spec = importlib.util.find_spec("flashinfer")
    include = Path(spec.submodule_search_locations[0]) / "data" / "include" if spec else None
    return include if include is not None and (include / "flashinfer" / "norm.cuh").is_file() else None


FI_INCLUDE = _flashinfer_include()  # known at collection: without it the FlashInfer tests are not generated


def _ptx(source, arch="sm_90", defines=None, flags=(), include_dirs=()):
    from verifier.toolchain.nvcc import compile_ptx

    try:
        return compile_ptx(source, arch=arch, defines=defines, flags=flags, include_dirs=include_dirs)
    except ToolMissing as e:
        pytest.skip(f"needs nvcc: {e.message}")


@pytest.fixture(scope="module")
def sync_module():
    return ptx.parse(_ptx(SYNC).read_text())


def test_split_operands_keeps_vectors_and_addresses_whole():
    assert ptx.split_operands("{%f1, %f2}, [%rd1+8]") == ("{%f1, %f2}", "[%rd1+8]")
    assert ptx.split_operands("%r17|%p3, %r13, %r15, %r14, %r16") == ("%r17|%p3", "%r13", "%r15", "%r14", "%r16")


def test_entries_params_bounds_and_shared_variables(sync_module):
    mod = sync_module
    assert {f.name for f in mod.entries} == {"rms_block_ok_f32", "rms_block_missing_sync_f32",
                                             "ln_twice_no_barrier_f32_e4", "rms_tree_ok_f32", "rms_tree_divergent_f32"}
    fn = mod.functions["rms_tree_ok_f32"]
    assert fn.maxntid == (256, 1, 1)
    assert len(fn.params) == 6 and fn.params[0] == "rms_tree_ok_f32_param_0"
    (name, size), = fn.shared.items()  # __shared__ float s[THREADS]
    assert name.endswith("1s") and size == 1024
    assert mod.target == "sm_90"


def test_source_positions_follow_the_inlined_at_chain(sync_module):
    mod = sync_module
    fn = mod.functions["rms_block_ok_f32"]
    bars = [i for i in fn.instrs if i.op == "bar.sync"]
    common = str((ROOT / "kernels/cuda/common.cuh").resolve())
    # kv::block_sum's two barriers are common.cuh lines 51 and 53, inlined into sync_defects.cu
    assert [ptx.position(mod, b) for b in bars] == [(common, 51), (common, 53)]
    shfl = next(i for i in fn.instrs if i.op.startswith("shfl.sync"))
    innermost = ptx.position(mod, shfl)
    assert innermost[0].endswith("sm_30_intrinsics.hpp")  # CUDA's header: the intrinsic itself
    user = ptx.position(mod, shfl, prefer=lambda p: "/targets/" not in p and "include" not in p)
    assert user == (common, 36)  # kv::warp_sum's __shfl_xor_sync line


def test_cfg_splits_before_barriers_and_finds_the_divergent_branch(sync_module):
    fn = sync_module.functions["rms_tree_divergent_f32"]
    cfg = CFG(fn)
    barrier_blocks = [b for b in cfg.blocks if cfg.barrier_block[b.id]]
    assert len(barrier_blocks) == 9  # one after the partials' store, one per unrolled stage (8)
    for b in barrier_blocks:
        assert fn.instrs[b.start].op == "bar.sync"
        # inside `if (t < st)`: every stage's barrier hangs on a conditional branch
    assert sum(1 for b in barrier_blocks if cfg.cdeps[b.id]) == 8
    ok = CFG(sync_module.functions["rms_tree_ok_f32"])
    assert [bool(ok.cdeps[b.id]) for b in ok.blocks if ok.barrier_block[b.id]] == [False] * 9


def test_inline_asm_scopes_are_parsed():
    # the f16-accumulating all-reduce uses __hadd / __hadd2: inline-asm '{ add.f16 ... }' scopes
    mod = ptx.parse(_ptx(ROOT / "kernels/cuda/allreduce.cu").read_text(), wanted={"allreduce_x1_f16_f16acc"})
    fn = mod.functions["allreduce_x1_f16_f16acc"]
    assert any(i.op == "add.f16" for i in fn.instrs)
    assert set(mod.functions) == {"allreduce_x1_f16_f16acc"}  # the others are skipped unread


def test_a_statement_it_cannot_read_is_listed_with_its_line_not_raised():
    text = (".version 9.0\n.target sm_90\n.visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\tmov.u32 %r1, 1;\n"
            "\t??? nonsense;\n\tfrobnicate.b32 %r2, %r1;\n\tadd.u32 %r2, %r1,\n}\n.visible .entry j()\n{\n\tret;\n}\n")
    mod = ptx.parse(text)
    fn = mod.functions["k"]
    assert [(line, why.split(" ")[0]) for line, _s, _loc, why in fn.unparsed] == [
        (7, "not"), (8, "`frobnicate`"), (9, "the")]  # unknown opcode; no ';' before the closing brace
    assert [i.op for i in fn.instrs] == ["mov.u32"] and mod.functions["j"].instrs[0].op == "ret"


SCOPED = """.version 9.0
.target sm_90
.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<4>;
	.reg .f32 	%f<4>;
	mov.u32 	%r1, %tid.x;
	{  .reg .f32 r0;  .reg .pred p;  shfl.sync.down.b32 r0|p, %f1, %r1, 31, -1;  @p add.f32 r0, r0, %f1;  mov.f32 %f2, r0;}
	{ .reg .b32 %r1;
	  mov.u32 %r1, 5;
	  add.u32 %r2, %r1, 1; }
	{ .reg .pred __$temp3;
	  setp.gt.f32 __$temp3, %f1, %f2;
	  selp.u32 %r3, 1, 0, __$temp3;}
	{abs.f32 %f3,%f2;
}
	add.u32 	%r3, %r1, 1;
	ld.global.v2.f32 	{%f1, %f2}, [%rd1];
	ret;
}
"""


def test_inline_asm_scopes_rename_their_registers():
    fn = ptx.parse(SCOPED).functions["k"]
    got = [(i.line_no, i.pred, i.op, i.args) for i in fn.instrs]
    assert not fn.unparsed
    assert got == [
        (10, None, "mov.u32", ("%r1", "%tid.x")),
        (11, None, "shfl.sync.down.b32", ("%r0$2|%p$2", "%f1", "%r1", "31", "-1")),  # names without '%'
        (11, "%p$2", "add.f32", ("%r0$2", "%r0$2", "%f1")),  # guarded on the scope's predicate
        (11, None, "mov.f32", ("%f2", "%r0$2")),
        (13, None, "mov.u32", ("%r1$3", "5")),  # shadows the function's %r1 ...
        (14, None, "add.u32", ("%r2", "%r1$3", "1")),
        (16, None, "setp.gt.f32", ("%__$temp3$4", "%f1", "%f2")),
        (17, None, "selp.u32", ("%r3", "1", "0", "%__$temp3$4")),
        (18, None, "abs.f32", ("%f3", "%f2")),
        (20, None, "add.u32", ("%r3", "%r1", "1")),  # ... only inside its scope
        (21, None, "ld.global.v2.f32", ("{%f1, %f2}", "[%rd1]")),  # a vector operand is no scope
        (22, None, "ret", ()),
    ]


def test_lines_are_the_lines_of_the_ptx_file_when_other_functions_are_skipped():
    # issue #23: with the unwanted functions cut out, the line a message named was not the statement's line
    text = _ptx(ROOT / "kernels/third_party/cub/cub_reductions.cu").read_text()
    lines = text.splitlines()
    entries = [f.name for f in ptx.parse(text).entries]
    assert len(entries) == 9
    for name in entries[3:5]:
        fn = ptx.parse(text, wanted={name}).functions[name]
        assert set(ptx.parse(text, wanted={name}).functions) == {name}
        assert fn.instrs and all(i.op in lines[i.line_no - 1] for i in fn.instrs)


def test_source_chain_follows_loc_lines_back_to_the_user_source():
    # nvcc writes an inlined call as one .loc line per level, each inlined_at the previous one
    text = (".version 9.0\n.target sm_90\n.visible .entry k()\n{\n\t.loc\t1 26 5\n\t.loc\t2 103 9, function_name "
            "$L__info_string1, inlined_at 1 26 5\n\t.loc\t3 292 5, function_name $L__info_string2, inlined_at 2 103 9\n"
            "\tret;\n}\n\t.file\t1 \"/src/k.cu\"\n\t.file\t2 \"/cuda/a.h\"\n\t.file\t3 \"/cuda/b.h\"\n")
    mod = ptx.parse(text)
    (ret,) = mod.functions["k"].instrs
    assert ret.loc == ((3, 292), (2, 103), (1, 26))
    assert ptx.position(mod, ret, prefer=lambda p: not p.startswith("/cuda")) == ("/src/k.cu", 26)


def _unread(path) -> list:
    mod = ptx.parse(Path(path).read_text())
    return [(f.name, line, stmt, why) for f in mod.functions.values() for line, stmt, _loc, why in f.unparsed]


@functools.lru_cache(maxsize=1)
def _defines_by_source() -> dict:
    """{CUDA source: [defines of each dtype variant]} of every CUDA spec of the repository (bundled, cub, defect
    catalogue)."""
    from verifier.declare.registry import load

    specs = [s for s in load([str(ROOT / "kernels" / d) for d in ("cuda", "third_party/cub")] +
                             [str(ROOT / "kernels/defects/cuda/defects.py")]) if s.kind == "cuda"]
    out: dict = {}
    for s in specs:
        for dt in s.dtypes:
            d = s.defines(dt)
            if d not in out.setdefault(s.source_path().resolve(), []):
                out[s.source_path().resolve()].append(d)
    return out


SOURCES = sorted(str(p.relative_to(ROOT)) for d in ("cuda", "defects/cuda", "third_party/cub")
                 for p in (ROOT / "kernels" / d).glob("*.cu")) + ["tests/data/lint/ptx_coverage.cu"]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: Path(p).name)
def test_every_statement_nvcc_writes_for_the_repository_kernels_is_read(source, arch):
    """Every CUDA source of the repository and the PTX coverage fixture, whole PTX files (every function, every
    dtype variant its specs declare): no statement the parser cannot read."""
    paths = {_ptx(ROOT / source, arch, d) for d in _defines_by_source().get((ROOT / source).resolve(), [None])}
    assert [u for p in sorted(paths) for u in _unread(p)] == []


def test_every_cuda_source_of_the_repository_has_specs():
    assert {Path(s).name for s in SOURCES} >= {"rmsnorm.cu", "softmax_fast.cu", "allreduce.cu", "cub_reductions.cu",
                                               "warp_sync_defects.cu", "lint_defects.cu", "ptx_coverage.cu"}
    assert {(ROOT / s).resolve() for s in SOURCES[:-1]} == set(_defines_by_source())


COVERAGE = ROOT / "tests/data/lint/ptx_coverage.cu"


def test_the_coverage_fixture_holds_what_it_is_for():
    ops = {i.op for f in ptx.parse(_ptx(COVERAGE, "sm_90").read_text()).functions.values() for i in f.instrs}
    for want in ("ld.global.nc.v4.f32", "prmt.b32", "cp.async.ca.shared.global", "cp.async.commit_group",
                 "cp.async.wait_group", "redux.sync.add.u32", "match.any.sync.b32", "match.all.sync.b32",
                 "vote.sync.ballot.b32", "activemask.b32", "elect.sync", "griddepcontrol.wait",
                 "griddepcontrol.launch_dependents", "barrier.cluster.arrive", "barrier.cluster.wait", "mapa.u64"):
        assert want in ops, want


FI_INSTANCES = """#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <flashinfer/norm.cuh>
namespace fn = flashinfer::norm;
template __global__ void fn::RMSNormKernel<4, float>(float*, float*, float*, uint32_t, uint32_t, uint32_t, float, float);
template __global__ void fn::RMSNormKernel<8, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, uint32_t,
                                                             uint32_t, uint32_t, float, float);
template __global__ void fn::FusedAddRMSNormKernel<8, __half>(__half*, __half*, __half*, uint32_t, uint32_t, uint32_t,
                                                              float, float);
"""


@pytest.mark.skipif(FI_INCLUDE is None, reason="flashinfer-python is not installed (pip install --no-deps "
                    "flashinfer-python==0.7.4): its norm.cuh is what this test compiles")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_flashinfer_norm_kernels_are_read_whole(tmp_path, arch):
    """FlashInfer's RMSNorm kernels (headers of the installed flashinfer-python wheel, instantiated here; nothing
    of theirs is in the repository). norm.cuh includes cuBLAS and cuRAND headers it does not use: empty ones do."""
    include = FI_INCLUDE
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for h in ("cublasLt.h", "cublas_v2.h", "curand_kernel.h"):
        (stubs / h).write_text("#pragma once\n")
    src = tmp_path / "fi_norm.cu"
    src.write_text(FI_INSTANCES)
    path = _ptx(src, arch, flags=("-std=c++17",), include_dirs=(include, stubs))
    mod = ptx.parse(path.read_text())
    assert len(mod.entries) == 3 and _unread(path) == []
    ops = {i.op for f in mod.entries for i in f.instrs}
    assert "shfl.sync.bfly.b32" in ops and ("griddepcontrol.wait" in ops) == (arch == "sm_90")

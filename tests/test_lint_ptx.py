"""The PTX parser and CFG of verifier.lint on real nvcc output: the catalogue's sync defects and the bundled
all-reduce (inline-asm scopes) compiled with the local nvcc through verifier.toolchain.nvcc.compile_ptx."""
from pathlib import Path

import pytest

from verifier.errors import ToolMissing
from verifier.lint import ptx
from verifier.lint.cfg import CFG

ROOT = Path(__file__).resolve().parents[1]
SYNC = ROOT / "kernels/defects/cuda/sync_defects.cu"


def _ptx(source, arch="sm_90", defines=None):
    from verifier.toolchain.nvcc import compile_ptx

    try:
        return compile_ptx(source, arch=arch, defines=defines)
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


def test_malformed_statement_is_a_syntax_error():
    text = ".version 9.0\n.target sm_90\n.visible .entry k()\n{\n\t??? nonsense;\n}\n"
    with pytest.raises(ptx.PtxSyntaxError, match="line 5: cannot parse"):
        ptx.parse(text)
    with pytest.raises(ptx.PtxSyntaxError, match="line 5: unterminated"):
        ptx.parse(text.replace("nonsense;", "nonsense"))

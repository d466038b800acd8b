"""verifier lint's precision and recall, measured on the kernels: no finding at all (warnings included) on
any bundled CUDA kernel or any correct twin of the defect catalogue, and every sync/race defect of the
catalogue caught with the class and the two source lines it is about."""
from pathlib import Path

import pytest

from verifier.results.kernel import KernelReport
from verifier.gpu.probe import CPU_BUILD_ARCHES
from verifier.toolchain.nvcc import nvcc_version
from verifier.lint.step import launch_facts, lint_spec
from verifier.declare.registry import load
from verifier.spec import CudaKernel, Launch, dtypes

from test_defects_specs import _matrix  # kernels/defects/matrix.py loaded by path (kernels/ is not a package)

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")
SYNC_RACE_CLASSES = ("racecheck", "synccheck", "static")


def _lint(spec) -> KernelReport:
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), CPU_BUILD_ARCHES)
    return report


def _classes(report) -> set:
    return {f.message.split(":", 1)[0] for f in report.findings}


@pytest.fixture(scope="module")
def entries():
    return _matrix().load_entries()


def test_bundled_cuda_kernels_have_no_finding():
    # kernels/third_party/cub: ours on cub::BlockReduce / cub::WarpReduce, whose inline-asm scopes once ended
    # verifier lint with "cannot parse PTX statement '@p add.f32 r0, r0, ...'" (issue #23)
    specs = [s for s in load([str(ROOT / "kernels" / d) for d in ("cuda", "third_party/cub")]) if s.kind == "cuda"]
    assert len(specs) >= 33 and {"cub-rmsnorm", "cub-warp-softmax", "cub-block-sum"} <= {s.name for s in specs}
    for spec in specs:
        r = _lint(spec)
        assert not r.findings, f"{spec.name}: " + "\n".join(f.message for f in r.findings)
        assert r.cells and all(v == "pass" for v in r.cells.values()), (spec.name, r.cells)


def test_correct_twins_have_no_finding(entries):
    twins = {e.twin: e.twin_spec for e in entries if e.twin_spec.kind == "cuda"}
    assert {"cuda-rmsnorm-block", "cuda-rmsnorm-tree", "cuda-rmsnorm-small", "cuda-rmsnorm-global-scratch",
            "cuda-layernorm-twopass", "cuda-rmsnorm-warp-store-all", "cuda-rmsnorm-warp-lane0",
            "cuda-rmsnorm-warp-atomic-rows"} <= set(twins)
    for name, spec in twins.items():
        r = _lint(spec)
        assert not r.findings, f"{name}: " + "\n".join(f.message for f in r.findings)


@pytest.mark.parametrize("name", ["cuda-rmsnorm-warp-store-all", "cuda-rmsnorm-warp-rows-loop"])
def test_warp_per_row_rmsnorms_of_issue_23_have_no_false_race(name):
    # once "WAW hazard ... thread 0 writes total+0 and thread 1 writes it": all 32 lanes store the bit-identical
    # xor-butterfly total in one st.shared; and a WAR between a row's read of the slot and the next row's store,
    # which comes after the next row's shuffles (every lane's, so after every lane's read)
    from verifier.declare.registry import load_spec_file

    spec = next(s for s in load_spec_file(str(ROOT / "kernels/defects/cuda/defects.py")) if s.name == name)
    r = _lint(spec)
    assert not r.findings, "\n".join(f.message for f in r.findings)


def test_every_sync_or_race_defect_is_caught(entries):
    sync = [e for e in entries if e.spec.kind == "cuda" and e.caught_by in SYNC_RACE_CLASSES]
    assert len(sync) >= 10
    for e in sync:
        r = _lint(e.spec)
        assert r.verdict == "fail" and any(f.severity == "error" for f in r.findings), e.name


@pytest.mark.parametrize("defect, cls, at, other", [
    ("defect-missing-syncthreads", "shared-race", "sync_defects.cu:23", "sync_defects.cu:25"),
    ("defect-block-reduce-twice-no-barrier", "shared-race", "sync_defects.cu:36", "sync_defects.cu:34"),
    ("defect-divergent-syncthreads", "divergent-barrier", "sync_defects.cu:101", "sync_defects.cu:99"),
    ("defect-early-exit-before-barrier", "divergent-barrier", "common.cuh:51", "lint_defects.cu:29"),
    ("defect-tree-first-barrier-missing", "shared-race", "lint_defects.cu:42", "lint_defects.cu:45"),
    ("defect-shuffle-inactive-lanes", "inactive-lanes", "common.cuh:36", "lint_defects.cu:60"),
    ("defect-global-scratch-shared-by-blocks", "global-race", "lint_defects.cu:84", "lint_defects.cu:84"),
    # lanes of one warp storing 32 different values (a warp-uniform model must not clear them), a dropped
    # __syncwarp before a read and one before a store: all three within one warp, between shuffles
    ("defect-warp-down-total-stored-by-all-lanes", "shared-race", "warp_sync_defects.cu:50", "warp_sync_defects.cu:50"),
    ("defect-warp-lane0-store-no-syncwarp", "shared-race", "warp_sync_defects.cu:75", "warp_sync_defects.cu:77"),
    ("defect-warp-slot-reuse-no-syncwarp", "shared-race", "warp_sync_defects.cu:94", "warp_sync_defects.cu:90"),
])
def test_defect_class_and_both_program_points(entries, defect, cls, at, other):
    e = next(x for x in entries if x.name == defect)
    r = _lint(e.spec)
    hits = [f for f in r.findings if f.message.startswith(cls + ":")]
    assert hits, f"{defect}: no {cls} finding in {[f.message.splitlines()[0] for f in r.findings]}"
    lines = [f.message.splitlines() for f in hits]
    assert any(ls[1].strip().startswith("at ") and at in ls[1] and other in ls[2] for ls in lines), lines


def test_the_early_exit_also_breaks_the_shuffles(entries):
    e = next(x for x in entries if x.name == "defect-early-exit-before-barrier")
    assert _classes(_lint(e.spec)) == {"divergent-barrier", "inactive-lanes"}


def _rms_n2(block, grid):
    src = ROOT / "kernels" / "cuda" / "rmsnorm.cu"

    def launches(M, N, dt, params):
        return [Launch(entry="rmsnorm_n2_f32", grid=grid(M), block=block, args=("x", "w", "y", "M", "N", "eps"))]

    return CudaKernel(name="n2-custom", op="rmsnorm", source=str(src), launches=launches, dtypes=[dtypes("f32")])


def test_block_size_comes_from_the_launches():
    # rmsnorm_n2 is clean at 256 threads; launched with 100, its full-mask shuffles name lanes 4..31 of a
    # 4-lane last warp, and its warp-partial reads index lanes that hold no partial.
    assert not _lint(_rms_n2((256,), lambda M: (M,))).findings
    r = _lint(_rms_n2((100,), lambda M: (M,)))
    msgs = [f.message for f in r.findings if f.severity == "error"]
    assert any(m.startswith("inactive-lanes:") and "not a multiple of 32" in m for m in msgs), msgs


def test_grid_of_one_block_has_no_cross_block_race(entries):
    e = next(x for x in entries if x.name == "defect-global-scratch-shared-by-blocks")
    spec = e.spec
    one = CudaKernel(name="one-block", op="rmsnorm", source=str(spec.source_path()), dtypes=[dtypes("f32")],
                     launches=lambda M, N, dt, p: [Launch(entry="rms_global_scratch_shared_by_blocks_f32", grid=(1,),
                                                         block=(256,), args=spec.launches(M, N, dt, p)[0].args)])
    assert launch_facts(one, [dtypes("f32")])["rms_global_scratch_shared_by_blocks_f32"].max_grid_blocks == 1
    assert not _lint(one).findings
    assert launch_facts(spec, [dtypes("f32")])["rms_global_scratch_shared_by_blocks_f32"].max_grid_blocks > 1


def test_a_call_not_followed_is_a_warning_not_a_pass(tmp_path):
    src = tmp_path / "callk.cu"
    src.write_text("__device__ __noinline__ void helper(float* s) { s[threadIdx.x] = 1.f; __syncthreads(); }\n"
                   "extern \"C\" __global__ void k(float* y) { __shared__ float s[256]; helper(s);\n"
                   "  y[blockIdx.x * 256 + threadIdx.x] = s[255 - threadIdx.x]; }\n")
    spec = CudaKernel(name="calls-helper", op="reduce_sum", source=str(src), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch(entry="k", grid=(M,), block=(256,), args=("y",))])
    r = _lint(spec)
    assert [f.severity for f in r.findings] == ["warning"]
    assert r.findings[0].message.startswith("not-followed:") and "_Z6helperPf" in r.findings[0].message


def test_a_justified_suppression_turns_a_finding_into_info(tmp_path, entries):
    import shutil

    from verifier.errors import UsageError
    from verifier.declare.registry import load_spec_file

    work = tmp_path / "k"
    shutil.copytree(ROOT / "kernels" / "defects" / "cuda", work / "defects" / "cuda")
    shutil.copytree(ROOT / "kernels" / "cuda", work / "cuda")
    (work / ".git").mkdir()  # the search for lint-suppressions.toml stops at a repository root
    spec = next(s for s in load_spec_file(str(work / "defects/cuda/defects.py"))
                if s.name == "defect-global-scratch-shared-by-blocks")
    (work / "lint-suppressions.toml").write_text(
        '[[suppress]]\nkind = "global-race"\nkernel = "defect-global-scratch-*"\nreason = "grid of one block in prod"\n'
        '[[suppress]]\nkind = "shared-race"\nkernel = "nothing-*"\nreason = "stale"\n')
    r = _lint(spec)
    assert [f.severity for f in r.findings] == ["info"] and "suppressed: grid of one block in prod" in r.findings[0].message
    assert r.verdict == "pass" and r.cells[("f32", "static")] == "pass"
    assert any("unused lint suppression" in n and "stale" in n for n in r.notes)
    (work / "lint-suppressions.toml").write_text('[[suppress]]\nkind = "global-race"\nreason = "x"\n')
    with pytest.raises(UsageError, match="would suppress every global-race"):
        _lint(spec)

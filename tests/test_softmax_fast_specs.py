"""CPU-side checks of kernels/cuda/softmax_fast_spec.py (S5, split, cluster): the size-class tables are well formed,
launches cover every column exactly once, and refusals say what to use instead. (Every class's entry is checked
against the cubin, with ptxas resources, by the battery's build step in CPU CI; values on a GPU.)"""
import dataclasses
import importlib.util
import re
from pathlib import Path

import pytest

from verifier.battery.build import check_build
from verifier.declare import device
from verifier.results.options import Options
from verifier.spec import dtypes, vector_width
from verifier.toolchain import nvcc

CUDA = Path(__file__).resolve().parent.parent / "kernels" / "cuda"
_spec = importlib.util.spec_from_file_location("softmax_fast_spec_under_test", CUDA / "softmax_fast_spec.py")
F = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(F)
KERNELS = {k.name: k for k in F.KERNELS}
SOURCE = (CUDA / "softmax_fast.cu").read_text()
IO = ("f32", "f16", "bf16")
S5_KINDS = {"cuda-softmax-s5": (F.S5, "softmax_s5"), "cuda-softmax-s5f": (F.S5F, "softmax_s5f")}


@pytest.mark.parametrize("kernel", sorted(S5_KINDS))
@pytest.mark.parametrize("tag", IO)
def test_s5_classes_are_whole_warps_within_a_block(kernel, tag):
    sizes, _ = S5_KINDS[kernel]
    assert KERNELS[kernel].sizes is sizes
    assert all(t.threads % 32 == 0 and t.threads <= 512 for t in sizes.classes(dtypes(tag)))


@pytest.mark.skipif(nvcc.nvcc_version() is None, reason="nvcc is not installed")
@pytest.mark.parametrize("kernel", sorted(S5_KINDS))
def test_the_build_step_finds_every_s5_class_entry(kernel):
    """Every class, including those no probe length reaches (t64_v7 holds 2049..3584 for 16-bit types), is built."""
    k = dataclasses.replace(KERNELS[kernel], origin=str(CUDA / "softmax_fast_spec.py"))  # source relative to it
    report = check_build(k, Options(budget="quick", device="cpu"), k.dtypes)
    assert not [f for f in report.findings if f.severity == "error"], [f.message for f in report.findings]
    noted = {n.split(": ")[0].split("] ")[1] for n in report.notes if n.startswith("[sm_90] ")}
    assert {S5_KINDS[kernel][0].entry(n, dt) for dt in k.dtypes for n in k.class_lengths(dt)} <= noted


@pytest.mark.parametrize("kernel", sorted(S5_KINDS))
@pytest.mark.parametrize("tag", IO)
@pytest.mark.parametrize("N", [8, 128, 512, 1000, 1024, 2048, 3584, 4096, 8192, 16384, 32768])
def test_s5_launch_covers_every_column_once(kernel, tag, N):
    sizes, stem = S5_KINDS[kernel]
    dt = dtypes(tag)
    w = vector_width(dt)
    if N % w:
        assert KERNELS[kernel].check_supported(37, N, dt)
        return
    M = 37
    assert KERNELS[kernel].check_supported(M, N, dt) is None
    (launch,) = KERNELS[kernel].launches(M, N, dt, {})
    tile = sizes.of(N, dt)
    suffix = f"_m{tile.min_blocks}" if tile.min_blocks else ""
    assert launch.entry == f"{stem}_t{tile.threads}_v{tile.vectors}{suffix}_{tag}"
    rows = max(1, F.BLOCK // tile.threads)
    assert launch.block == (tile.threads * rows,) and launch.grid[0] * rows >= M > (launch.grid[0] - 1) * rows
    assert tile.threads * tile.vectors * w >= N  # every column has a slot
    assert all(c < N for c in sizes.lengths(dt) if c < tile.capacity(dt))  # and no smaller class would do


@pytest.mark.parametrize("name, N, tag, want", [
    ("cuda-softmax-s5", 1002, "f32", "multiple of the 4-element"),
    ("cuda-softmax-s5", 1028, "bf16", "multiple of the 8-element"),
    ("cuda-softmax-s5", 32776, "f16", "exceeds the register-resident limit 32768"),
    ("cuda-softmax-s5", 152064, "bf16", "use cuda-softmax-split"),
    ("cuda-softmax-s5f", 1028, "bf16", "multiple of the 8-element"),
    ("cuda-softmax-s5f", 32776, "bf16", "exceeds the register-resident limit 32768"),
    ("cuda-softmax-split", 7, "f32", "multiple of the 4-element"),
    ("cuda-softmax-cluster", 163848, "bf16", "limit 163840; use cuda-softmax-split"),
    ("cuda-softmax-cluster", 12, "bf16", "multiple of the 8-element"),
])
def test_refusals_name_the_reason_and_the_alternative(name, N, tag, want):
    why = KERNELS[name].check_supported(4, N, dtypes(tag))
    assert why and want in why


@pytest.mark.parametrize("tag", IO)
@pytest.mark.parametrize("N", [8, 8192, 16384, 152064, 1 << 20])
def test_split_launches(tag, N):
    dt = dtypes(tag)
    M = 32
    stats, norm = KERNELS["cuda-softmax-split"].launches(M, N, dt, {})
    chunks = F.split_chunks(N, dt)
    per_block = F.SPLIT_THREADS * F.SPLIT_VECS * vector_width(dt)
    assert (chunks - 1) * per_block < N <= chunks * per_block
    for l in (stats, norm):
        assert l.grid == (M * chunks,) and l.block == (F.SPLIT_THREADS,)
        assert l.args[-1].value == chunks
    assert stats.entry == f"softmax_split_stats_{tag}" and norm.entry == f"softmax_split_norm_{tag}"
    # the workspace holds a (max, sum) pair per chunk
    assert stats.args[1] is norm.args[1] is F.MS and F.MS.size(M, N) >= 2 * M * chunks


@pytest.mark.parametrize("tag", IO)
def test_cluster_capacity_and_launch(tag, monkeypatch):
    dt = dtypes(tag)
    monkeypatch.setattr(device.probe, "capability", lambda: None)
    k = KERNELS["cuda-softmax-cluster"]
    assert k.check_supported(32, 163840, dt) is None and "limit 163840" in k.check_supported(32, 163840 + 8, dt)
    (l,) = k.launches(32, 152064, dt, {})
    assert l.grid == (32 * F.CLUSTER,) and l.block == (F.CLUSTER_THREADS,)
    monkeypatch.setattr(device.probe, "capability", lambda: (8, 0))
    assert "compute capability 9.0" in k.check_supported(32, 152064, dt)


def test_grids_past_the_launch_limit_are_refused():
    assert "exceed the grid's 2^31 - 1 blocks" in KERNELS["cuda-softmax-split"].check_supported(2**30, 152064, dtypes("f32"))
    assert "exceed the grid's 2^31 - 1 blocks" in KERNELS["cuda-softmax-cluster"].check_supported(2**29, 8, dtypes("f32"))
    assert KERNELS["cuda-softmax-split"].check_supported(2**20, 152064, dtypes("f32")) is None


def test_s5_keeps_nothing_out_of_registers():
    for k in F.KERNELS:
        assert k.expectations.max_spill_bytes == 0 and k.expectations.max_stack_bytes == 0
        assert k.math_mode == ("fast" if k.name == "cuda-softmax-s5f" else "precise") and k.expectations.deterministic


def test_s5f_differs_from_s5_only_in_its_math():
    """The fast rung is S5 with exp_approx and a multiply by 1/s: same template, same classes unless a tune moves them."""
    assert "s5<T, TPR, VECS, true>" in SOURCE and "ex2.approx.ftz.f32" in SOURCE
    assert re.search(r"FAST \? exp_approx\(v\[c\]\[k\] - m\) : expf\(v\[c\]\[k\] - m\)", SOURCE)

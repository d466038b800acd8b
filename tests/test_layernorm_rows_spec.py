"""CPU-side checks of kernels/cuda/layernorm_rows_spec.py (the rows rung of LayerNorm): the size classes are whole warps
within a block, every class's entry is built, register-resident, for both CPU build arches, launches cover every
column and row exactly once, and refusals name the reason and the alternative. (Values on a GPU.)"""
import dataclasses
import importlib.util
from pathlib import Path

import pytest

from verifier.battery.build import check_build
from verifier.results.options import Options
from verifier.spec import dtypes, vector_width
from verifier.toolchain import nvcc

CUDA = Path(__file__).resolve().parent.parent / "kernels" / "cuda"
_spec = importlib.util.spec_from_file_location("layernorm_rows_spec_under_test", CUDA / "layernorm_rows_spec.py")
R = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(R)
(K,) = R.KERNELS
IO = ("f32", "f16", "bf16")


@pytest.mark.parametrize("tag", IO)
def test_classes_are_whole_warps_within_a_block(tag):
    assert all(t.threads % 32 == 0 and t.threads <= 512 for t in R.ROWS.classes(dtypes(tag)))


@pytest.mark.skipif(nvcc.nvcc_version() is None, reason="nvcc is not installed")
def test_the_build_step_finds_every_class_entry_register_resident():
    k = dataclasses.replace(K, origin=str(CUDA / "layernorm_rows_spec.py"))  # source relative to it
    report = check_build(k, Options(budget="quick", device="cpu"), k.dtypes)
    assert not report.findings, [f.message for f in report.findings]  # no spill, no stack, every entry present
    for arch in ("sm_80", "sm_90"):
        noted = {n.split(": ")[0].split("] ")[1] for n in report.notes if n.startswith(f"[{arch}] ")}
        assert {R.ROWS.entry(n, dt) for dt in k.dtypes for n in k.class_lengths(dt)} <= noted


@pytest.mark.parametrize("tag", IO)
@pytest.mark.parametrize("N", [8, 128, 1000, 1024, 1032, 2048, 3584, 4096, 8192, 16384, 32768])
@pytest.mark.parametrize("M", [1, 37, 8192])
def test_launch_covers_every_column_and_row_once(tag, N, M):
    dt = dtypes(tag)
    w = vector_width(dt)
    why = K.check_supported(M, N, dt)
    if N % w or N > R.ROWS.lengths(dt)[-1]:
        assert why is not None
        return
    assert why is None
    (launch,) = K.launches(M, N, dt, {})
    tile = R.ROWS.of(N, dt)
    m = f"_m{tile.min_blocks}" if tile.min_blocks else ""
    assert launch.entry == f"layernorm_rows_t{tile.threads}_v{tile.vectors}{m}_{tag}"
    rows = max(1, R.BLOCK // tile.threads)
    groups = -(-M // rows)  # row groups of one block's width
    per = R.GROUPS_PER_BLOCK if (tile.threads, tile.vectors) in R.STRIDED.get(tag, ()) else 1
    G = launch.grid[0]
    assert launch.block == (tile.threads * rows,) and G * per >= groups > (G - 1) * per
    # ln_rows_p: block b takes groups b, b + G, ... (one block one group when not strided): each group once
    assert sorted(g for b in range(G) for g in range(b, groups, G)) == list(range(groups))
    assert tile.threads * tile.vectors * w >= N  # every column has a slot
    assert all(c < N for c in R.ROWS.lengths(dt) if c < tile.capacity(dt))  # and no smaller class would do


@pytest.mark.parametrize("N, tag, want", [
    (1002, "f32", "multiple of the 4-element"), (1028, "bf16", "16-byte vector of bfloat16; use cuda-layernorm-twopass"),
    (16388, "f32", "use cuda-layernorm-welford"), (32776, "f16", "use cuda-layernorm-welford"),
])
def test_refusals_name_the_reason_and_the_alternative(N, tag, want):
    assert want in K.check_supported(4, N, dtypes(tag))

"""CPU-side checks of kernels/cuda/softmax_fast_spec.py (S5, split, cluster): the spec's size-class tables name
entries the .cu instantiates, launches cover every column exactly once, and refusals say what to use instead.
(The cubin's entries and ptxas resources are checked by the battery's build step in CPU CI; values on a GPU.)"""
import importlib.util
import re
from pathlib import Path

import pytest

from verifier.spec import dtypes

CUDA = Path(__file__).resolve().parent.parent / "kernels" / "cuda"
_spec = importlib.util.spec_from_file_location("softmax_fast_spec_under_test", CUDA / "softmax_fast_spec.py")
F = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(F)
KERNELS = {k.name: k for k in F.KERNELS}
SOURCE = (CUDA / "softmax_fast.cu").read_text()
IO = ("f32", "f16", "bf16")


# kernel name -> (its size-class table, the entry macro, the entry name stem)
S5_KINDS = {"cuda-softmax-s5": (F.S5_CONFIGS, "KV_S5", "softmax_s5"),
            "cuda-softmax-s5f": (F.S5F_CONFIGS, "KV_S5F", "softmax_s5f")}


def _macro_configs(name, entry_macro):
    """(tpr, vecs) or (tpr, vecs, min blocks) of each entry of a size-class macro, in order."""
    body = re.search(rf"#define {name}\(TAG, T\)(.*?)\n(?!\s)", SOURCE, re.S).group(1)
    found = re.findall(rf"(\w+)\(TAG, T, (\d+), (\d+)(?:, (\d+))?\)", body)
    assert {m for m, *_ in found} <= {entry_macro, entry_macro + "M"}, f"{name} mixes entry macros: {found}"
    return tuple(tuple(int(v) for v in (a, b, c) if v) for _, a, b, c in found)


@pytest.mark.parametrize("kernel", sorted(S5_KINDS))
def test_s5_tables_match_the_source_macros(kernel):
    configs, macro, _ = S5_KINDS[kernel]
    assert configs[8] == _macro_configs(macro + "_16", macro)
    assert configs[4] == _macro_configs(macro + "_32", macro)
    for w, table in configs.items():
        caps = [t * v * w for t, v, *_ in table]
        assert caps == sorted(caps) and len(set(caps)) == len(caps)  # smallest fitting class is unique
        assert all(t % 32 == 0 and t <= 512 for t, *_ in table)  # whole warps, a block's worth at most


@pytest.mark.parametrize("kernel", sorted(S5_KINDS))
@pytest.mark.parametrize("tag", IO)
@pytest.mark.parametrize("N", [8, 128, 512, 1000, 1024, 2048, 3584, 4096, 8192, 16384, 32768])
def test_s5_launch_covers_every_column_once(kernel, tag, N):
    configs, macro, stem = S5_KINDS[kernel]
    dt = dtypes(tag)
    w = F.VEC_WIDTH[dt.input]
    if N % w:
        assert KERNELS[kernel].check_supported(37, N, dt)
        return
    M = 37
    assert KERNELS[kernel].check_supported(M, N, dt) is None
    (launch,) = KERNELS[kernel].launches(M, N, dt, {})
    tpr, vecs, suffix = F.s5_config(N, dt, configs)
    assert launch.entry == f"{stem}_t{tpr}_v{vecs}{suffix}_{tag}"
    minb = suffix[2:]
    assert (f"{macro}M(TAG, T, {tpr}, {vecs}, {minb})" if minb else f"{macro}(TAG, T, {tpr}, {vecs})") in SOURCE
    rows = max(1, F.BLOCK // tpr)
    assert launch.block == (tpr * rows,) and launch.grid[0] * rows >= M > (launch.grid[0] - 1) * rows
    assert tpr * vecs * w >= N  # every column has a slot
    smaller = [t * v * w for t, v, *_ in configs[w] if t * v * w < tpr * vecs * w]
    assert all(c < N for c in smaller)  # and no smaller class would do


@pytest.mark.parametrize("name, N, tag, want", [
    ("cuda-softmax-s5", 1002, "f32", "multiple of the 4-element"),
    ("cuda-softmax-s5", 1028, "bf16", "multiple of the 8-element"),
    ("cuda-softmax-s5", 32776, "f16", "exceeds the register-resident limit 32768"),
    ("cuda-softmax-s5", 152064, "bf16", "use cuda-softmax-split"),
    ("cuda-softmax-s5f", 1028, "bf16", "multiple of the 8-element"),
    ("cuda-softmax-s5f", 32776, "bf16", "exceeds the register-resident limit 32768"),
    ("cuda-softmax-split", 7, "f32", "multiple of the 4-element"),
    ("cuda-softmax-cluster", 163848, "bf16", "exceeds 163840"),
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
    per_block = F.SPLIT_THREADS * F.SPLIT_VECS * F.VEC_WIDTH[dt.input]
    assert (chunks - 1) * per_block < N <= chunks * per_block
    for l in (stats, norm):
        assert l.grid == (M * chunks,) and l.block == (F.SPLIT_THREADS,)
        assert l.args[-1].value == chunks
    assert stats.entry == f"softmax_split_stats_{tag}" and norm.entry == f"softmax_split_norm_{tag}"
    # the workspace holds a (max, sum) pair per chunk
    count = eval(F.WORKSPACE.split(":")[2], {"__builtins__": {}}, {"M": M, "N": N})
    assert count >= 2 * M * chunks


@pytest.mark.parametrize("tag", IO)
def test_cluster_capacity_and_launch(tag, monkeypatch):
    dt = dtypes(tag)
    monkeypatch.setattr(F, "_gpu_capability", lambda: None)
    assert F.cluster_limit(dt) == 163840 >= 152064
    (l,) = KERNELS["cuda-softmax-cluster"].launches(32, 152064, dt, {})
    assert l.grid == (32 * F.CLUSTER,) and l.block == (F.CLUSTER_THREADS,)
    assert f"KV_CLUSTER({tag}," in SOURCE
    assert "KV_CLUSTER_DIMS(kCluster) __launch_bounds__(kClusterThreads)" in SOURCE
    assert "__cluster_dims__(CL, 1, 1)" in SOURCE and f"kCluster = {F.CLUSTER}" in SOURCE
    monkeypatch.setattr(F, "_gpu_capability", lambda: (8, 0))
    assert "compute capability 9.0" in KERNELS["cuda-softmax-cluster"].check_supported(32, 152064, dt)


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

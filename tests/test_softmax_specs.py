"""CPU-side checks of the softmax-family CUDA specs (kernels/cuda/softmax_spec.py, online_softmax_spec.py).

Compiles each .cu for sm_90 (the verifier's cached build, verifier.toolchain.nvcc, whose ptxas -v report it reads)
and checks: every Launch names an entry that exists, no entry
is orphaned, launches are well formed (grid covers every row, workspaces shared between passes), size
classes are the smallest that hold N, `supports` refuses what the kernels cannot do, and register-resident
entries compile without spills or stack. Running the kernels needs a GPU and is the battery's job.
"""
import importlib.util
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from verifier.declare.kernels import stride_of
from verifier.errors import UsageError
from verifier.ops import OPS
from verifier.spec import CudaKernel, Workspace, dtypes, vector_width

CUDA_DIR = Path(__file__).resolve().parents[1] / "kernels" / "cuda"
SPEC_FILES = ("softmax_spec.py", "online_softmax_spec.py")
# Shapes the battery uses, plus every size-class edge.
NS = (1, 7, 31, 32, 33, 1000, 1024, 1025, 2048, 2049, 3584, 4096, 4097, 5120, 8192, 8193, 152064)
MS = (1, 4, 7, 13)


def _load(name):
    path = CUDA_DIR / name
    spec = importlib.util.spec_from_file_location(f"_kv_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SPECS = {name: _load(name) for name in SPEC_FILES}
KERNELS = {k.name: k for mod in SPECS.values() for k in mod.KERNELS}


def _source(k):
    return CUDA_DIR / k.source


def _ptxas(cu: Path):
    """{entry: {'regs', 'stack', 'spill_st', 'spill_ld'}} from the ptxas -v report of one sm_90 compile (the build
    cache's: the battery's flags, -lineinfo included, which changes no entry's registers, stack or spills)."""
    from verifier.toolchain.nvcc import compile_cubin

    info, cur = {}, None
    for line in compile_cubin(cu, arch="sm_90").ptxas_log.splitlines():
        if m := re.search(r"Compiling entry function '(\w+)' for 'sm_90'", line):
            cur = info.setdefault(m.group(1), {})
        elif cur is not None and (m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)):
            cur.update(stack=int(m[1]), spill_st=int(m[2]), spill_ld=int(m[3]))
        elif cur is not None and (m := re.search(r"Used (\d+) registers", line)):
            cur["regs"] = int(m[1])
    return info


@pytest.fixture(scope="module")
def compiled():
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH: install the CUDA toolkit to check the compiled entries")
    sources = sorted({_source(k) for k in KERNELS.values()})
    with ThreadPoolExecutor(len(sources)) as ex:
        infos = list(ex.map(_ptxas, sources))
    return dict(zip(sources, infos))


def _cases():
    for k in KERNELS.values():
        for dt in k.dtypes:
            for N in NS:
                for M in MS:
                    if k.check_supported(M, N, dt) is None:
                        yield k, dt, M, N


def _launches(k, dt, M, N):
    return k.launches(M, N, dt, k.op_params())


def test_specs_are_cuda_softmax_kernels():
    assert set(KERNELS) == {"cuda-softmax-s1", "cuda-softmax-s2", "cuda-softmax-s3", "cuda-softmax-s4",
                            "cuda-online-softmax-warp", "cuda-online-softmax-block"}
    for k in KERNELS.values():
        assert isinstance(k, CudaKernel) and k.op == "softmax" and k.math_mode == "precise"
        assert k.expectations.deterministic and not k.expectations.fast_intrinsics
        assert _source(k).is_file(), k.source


def test_every_launch_names_a_compiled_entry_and_every_entry_is_used(compiled):
    used = {src: set() for src in compiled}
    for k, dt, M, N in _cases():
        entries = compiled[_source(k)]
        for L in _launches(k, dt, M, N):
            assert L.entry in entries, f"{k.name} {dt.tag} N={N}: entry {L.entry} not in {_source(k).name}"
            used[_source(k)].add(L.entry)
    for src, entries in compiled.items():
        assert set(entries) == used[src], f"{src.name}: entries no spec launches: {sorted(set(entries) - used[src])}"


def test_launches_are_well_formed():
    op = OPS["softmax"]
    for k, dt, M, N in _cases():
        launches = _launches(k, dt, M, N)
        produced = set()
        for L in launches:
            (threads,) = L.block
            assert threads % 32 == 0 and 32 <= threads <= 1024, (k.name, L)
            assert L.smem == 0 and len(L.grid) == 1
            rows_per_block = threads // 32 if "warp" in L.entry else 1
            (blocks,) = L.grid
            assert blocks * rows_per_block >= M > (blocks - 1) * rows_per_block, (k.name, M, L.grid)
            args = tuple(a for a in L.args if stride_of(a) is None)  # row strides (S1-S4) come last
            assert all(stride_of(a) for a in L.args[len(args):]) and args[-2:] == ("M", "N")
            for a in args[:-2]:
                if isinstance(a, Workspace):  # one fp32 statistic per row
                    assert a.dtype == "float32" and a.size(M, N) == M, a
                    produced.add(a)
                else:
                    assert a in op.tensors(), a
        # the output is written by the last launch only, after every intermediate exists
        assert "y" in launches[-1].args and all("y" not in L.args for L in launches[:-1])
        assert all(t in produced for t in launches[-1].args if isinstance(t, Workspace))


@pytest.mark.parametrize("name, prefix", [
    ("cuda-softmax-s3", "softmax_s3_n"),
    ("cuda-softmax-s4", "softmax_s4_n"),
    ("cuda-online-softmax-warp", "online_softmax_warp_d"),
])
def test_size_class_is_the_smallest_that_holds_n(name, prefix):
    k = KERNELS[name]
    classes = k.class_lengths(k.dtypes[0])
    seen = set()
    for kk, dt, M, N in _cases():
        if kk is not k:
            continue
        (L,) = _launches(k, dt, M, N)
        cls = int(L.entry[len(prefix):].split("_")[0])
        assert N <= cls and not any(N <= c for c in classes if c < cls), (name, N, L.entry)
        seen.add(cls)
    assert seen == set(classes), f"{name}: classes never chosen: {set(classes) - seen}"


def test_s4_threads_times_vectors_cover_the_class():
    k = KERNELS["cuda-softmax-s4"]
    for dt in k.dtypes:
        w = vector_width(dt)
        for c in k.class_lengths(dt):
            (L,) = k.launches(1, c, dt, {})
            (t,) = L.block
            assert c % (t * w) == 0 and c // (t * w) >= 1, (dt.tag, c, t)


def test_register_resident_entries_do_not_spill(compiled):
    checked = 0
    for k, dt, M, N in _cases():
        e = k.expectations
        if e.max_spill_bytes is None:
            continue
        for L in _launches(k, dt, M, N):
            r = compiled[_source(k)][L.entry]
            assert r["spill_st"] + r["spill_ld"] <= e.max_spill_bytes, (L.entry, r)
            assert e.max_stack_bytes is None or r["stack"] <= e.max_stack_bytes, (L.entry, r)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("name, N, tag, why", [
    ("cuda-softmax-s3", 8193, "f32", "8192"),
    ("cuda-softmax-s3", 152064, "bf16", "8192"),
    ("cuda-softmax-s4", 8200, "f32", "8192"),
    ("cuda-softmax-s4", 1002, "f32", "multiple of the 4"),
    ("cuda-softmax-s4", 1028, "bf16", "multiple of the 8"),
    ("cuda-softmax-s4", 7, "f16", "multiple of the 8"),
    ("cuda-online-softmax-warp", 4097, "f32", "4096"),
    ("cuda-online-softmax-warp", 5120, "bf16", "4096"),
    ("cuda-online-softmax-warp", 1000, "f16", "not declared"),
])
def test_supports_refuses_what_the_kernel_cannot_do(name, N, tag, why):
    reason = KERNELS[name].check_supported(7, N, dtypes(tag))
    assert reason is not None and why in reason, reason


@pytest.mark.parametrize("name", ["cuda-softmax-s1", "cuda-softmax-s2", "cuda-online-softmax-block"])
def test_multipass_kernels_take_any_n(name):
    k = KERNELS[name]
    for dt in k.dtypes:
        for N in NS:
            assert k.check_supported(13, N, dt) is None, (name, dt.tag, N)


def test_launch_outside_a_class_is_an_error_not_a_partial_row():
    with pytest.raises(UsageError, match="8192"):
        KERNELS["cuda-softmax-s3"].launches(1, 8193, dtypes("f32"), {})
    with pytest.raises(UsageError, match="4096"):
        KERNELS["cuda-online-softmax-warp"].launches(1, 4097, dtypes("bf16"), {})

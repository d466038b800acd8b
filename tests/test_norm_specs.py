"""CPU-side checks of the bundled norm / all-reduce CUDA specs against their compiled code.

Each .cu under kernels/cuda/ owned here is compiled for sm_90 through the verifier's build cache
(verifier.toolchain.nvcc: keyed by the command, nvcc's version and the bytes of every file the compile read): the
cubin's ptxas -v report, and the PTX of the same front end and flags (nvcc -ptx writes the PTX that nvcc -keep
keeps from the cubin's compile, byte for byte). The tests check that every Launch names an entry that
exists, with arguments matching the entry's PTX parameter list in count and kind; that register
size classes cover the row; that `supports` accepts exactly what the kernels can do; that
register-resident kernels neither spill nor use stack; that 'precise' kernels use no approximate
PTX instructions; and that every compiled entry is reachable from some spec.
"""
from __future__ import annotations

import importlib.util
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from verifier.declare.kernels import stride_of
from verifier.toolchain import nvcc as build
from verifier.toolchain import ptxas
from verifier.dtypes import numpy_dtype
from verifier.ops import OPS
from verifier.spec import CudaKernel, Workspace

CUDA = Path(__file__).resolve().parent.parent / "kernels" / "cuda"
FAMILIES = ("rmsnorm", "layernorm", "fused_add_rmsnorm", "allreduce")
ARCH = "sm_90"
LIMIT = 8192  # register-resident limit of every register-resident kernel here: 32 elements x 256 threads
# The adversarial shapes the runner will use, plus every size-class boundary (E * 256 and one past it).
NS = sorted({1, 7, 31, 32, 33, 1000, 1001, 1002, 1004, 3584, 5120, 152064}
            | {e * 256 + d for e in range(1, 33) for d in (0, 1)})
MS = (1, 13)

needs_nvcc = pytest.mark.skipif(build.nvcc_version() is None, reason="nvcc is not installed")


def _load(family):
    path = CUDA / f"{family}_spec.py"
    spec = importlib.util.spec_from_file_location(f"_spec_{family}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MODULES = {f: _load(f) for f in FAMILIES}
KERNELS = [(f, k) for f, m in MODULES.items() for k in m.KERNELS]


def _ids(kernels):
    return [k.name for _, k in kernels]


def _supported(k):
    """(M, N, dtypes) the kernel accepts, over the shape grid."""
    return [(M, N, dt) for dt in k.dtypes for N in NS for M in MS if k.check_supported(M, N, dt) is None]


# ---- one compile per family ---------------------------------------------------------------------
_ENTRY_RE = re.compile(r"\.entry\s+(\w+)\(([^)]*)\)\s*(?:\.maxntid\s+(\d+))?")
_PARAM_RE = re.compile(r"\.param\s+\.(\w+)")


def _compile(family):
    cubin = build.compile_cubin(CUDA / f"{family}.cu", arch=ARCH)  # BuildError (the compiler's words) if it fails
    ptx = build.compile_ptx(CUDA / f"{family}.cu", arch=ARCH).read_text()
    entries = {}
    for name, params, maxntid in _ENTRY_RE.findall(ptx):
        body = ptx[ptx.index(f".entry {name}("):].split(".entry", 2)[1]
        entries[name] = {"params": _PARAM_RE.findall(params), "maxntid": int(maxntid) if maxntid else 1024,
                         "approx": sorted(set(re.findall(r"\b[a-z0-9]+\.approx[.\w]*", body)))}
    return {"entries": entries, "resources": ptxas.parse(cubin.ptxas_log, arch=ARCH)}


@pytest.fixture(scope="module")
def built():
    with ThreadPoolExecutor(len(FAMILIES)) as pool:
        futs = {f: pool.submit(_compile, f) for f in FAMILIES}
        return {f: fut.result() for f, fut in futs.items()}


# ---- specs are well formed ----------------------------------------------------------------------
def test_names_unique_and_described():
    names = [k.name for _, k in KERNELS]
    assert len(names) == len(set(names)), f"duplicate kernel names: {names}"
    for _, k in KERNELS:
        assert isinstance(k, CudaKernel) and (CUDA / k.source).is_file(), f"{k.name}: source {k.source} missing"
        assert len(k.description) > 40, f"{k.name}: describe the kernel's math and limits"
        assert (k.math_mode == "fast") == k.expectations.fast_intrinsics, k.name
        assert k.expectations.deterministic, f"{k.name}: no atomics here, every kernel is deterministic"


_ARG_KIND = {"M": "u32", "N": "u32", "eps": "f32"}


@needs_nvcc
@pytest.mark.parametrize("family,k", KERNELS, ids=_ids(KERNELS))
def test_launches_match_compiled_entries(built, family, k):
    entries = built[family]["entries"]
    op = OPS[k.op]
    cases = _supported(k)
    assert cases, f"{k.name} supports none of the shapes {NS}"
    for M, N, dt in cases:
        launches = k.launches(M, N, dt, k.op_params())
        used = set()
        for L in launches:
            where = f"{k.name} {dt.tag} M={M} N={N}: {L.entry}"
            assert L.entry in entries, f"{where} is not an entry of {family}.cu (has {sorted(entries)[:6]}...)"
            e = entries[L.entry]
            kinds = []
            for a in L.args:
                stride = stride_of(a)
                if stride is not None:  # the row stride of a 2-D tensor the launch also passes
                    assert stride.tensor in L.args and len(op.shape_of(stride.tensor, M, N)) == 2, where
                    kinds.append("u64" if stride.kind == "int64" else "u32")
                elif a in _ARG_KIND:
                    kinds.append(_ARG_KIND[a])
                elif isinstance(a, Workspace):
                    assert a.size(M, N) >= M, f"{where}: workspace {a.name} holds less than a value per row"
                    kinds.append("u64")
                else:
                    assert a in op.tensors(), f"{where}: {a!r} is not a tensor of op {k.op}"
                    kinds.append("u64")
                    used.add(a)
            assert kinds == e["params"], f"{where}: args {L.args} -> {kinds}, PTX params {e['params']}"
            # one block per row; a whole number of warps, within the entry's __launch_bounds__
            assert tuple(L.grid) == (M,), f"{where}: grid {L.grid}, expected one block per row"
            assert len(L.block) == 1 and L.block[0] % 32 == 0 and L.block[0] <= e["maxntid"], where
            if m := re.search(r"_e(\d+)$", L.entry):  # register size class: must cover the whole row
                assert int(m.group(1)) * L.block[0] >= N, f"{where}: size class too small for N={N}"
        assert used == set(op.tensors()), f"{k.name}: launches touch {sorted(used)}, op needs {op.tensors()}"


def _expected_accept(k, N, dt):
    """What each kernel can do, written independently of the spec's own tables."""
    if re.search(r"-(n3|n4|twopass)$|^cuda-fused-add-rmsnorm$", k.name) and N > LIMIT:
        return False
    if k.name.endswith("-n4"):
        return N % (16 // numpy_dtype(dt.input).itemsize) == 0
    if m := re.match(r"cuda-allreduce-[a-z0-9]+?x(\d+)", k.name):
        return N % int(m.group(1)) == 0
    return True


@pytest.mark.parametrize("family,k", KERNELS, ids=_ids(KERNELS))
def test_supports_exactly_what_the_kernel_does(family, k):
    for dt in k.dtypes:
        for N in NS:
            reason = k.check_supported(7, N, dt)
            want = _expected_accept(k, N, dt)
            assert (reason is None) == want, f"{k.name} {dt.tag} N={N}: supports -> {reason!r}, expected accept={want}"
            if reason is not None:
                assert re.search(r"use cuda-", reason) and f"N={N}" in reason, f"{k.name}: unhelpful reason {reason!r}"


def test_refusals_name_the_limit():
    n3 = next(k for _, k in KERNELS if k.name == "cuda-rmsnorm-n3")
    why = n3.check_supported(1, 9000, n3.dtypes[0])
    assert "limit 8192" in why and "cuda-rmsnorm-n2" in why
    n4 = next(k for _, k in KERNELS if k.name == "cuda-rmsnorm-n4")
    f16 = next(d for d in n4.dtypes if d.tag == "f16")
    assert "8-element 16-byte vector" in n4.check_supported(1, 1004, f16)
    packed = next(k for _, k in KERNELS if k.name == "cuda-allreduce-bf16x8-bf16acc")
    assert packed.dtypes[0].acc == "bfloat16" and "packing 8" in packed.check_supported(1, 33, packed.dtypes[0])


# ---- compiled code keeps the spec's promises ----------------------------------------------------
def _reachable(k):
    return {L.entry for M, N, dt in _supported(k) for L in k.launches(M, N, dt, k.op_params())}


@needs_nvcc
@pytest.mark.parametrize("family,k", KERNELS, ids=_ids(KERNELS))
def test_resources_and_math_mode(built, family, k):
    res, entries = built[family]["resources"], built[family]["entries"]
    for entry in sorted(_reachable(k)):
        problems = ptxas.check_expectations(res[entry], k.expectations)
        assert not problems, "\n".join(problems)
        if k.math_mode == "precise":
            assert not entries[entry]["approx"], f"{entry} is 'precise' but uses {entries[entry]['approx']}"


@needs_nvcc
@pytest.mark.parametrize("family", FAMILIES)
def test_every_entry_is_reachable(built, family):
    reach = set().union(*(_reachable(k) for f, k in KERNELS if f == family))
    dead = set(built[family]["entries"]) - reach
    assert not dead, f"{family}.cu has entries no spec launches (size-class tables out of sync?): {sorted(dead)}"

"""The large cases on a GPU (issue #36): aliased device memory (verifier.gpu.vmm) behaves as the plans say, torch
sees it through ``__cuda_array_interface__``, and at ``ci`` the correct row kernel passes every large case while the
offset defects fail theirs, each within the issue's time (docs/gpu-runs/2026-12-04-issue-36-large.md)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parent.parent
_REASON = gpu_and_nvcc_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def test_an_aliased_range_reads_back_as_its_plan_says():
    from verifier.gpu import vmm
    from verifier.gpu import aliasing as A

    chunk = vmm.granularity()
    k = vmm.shared_chunks(chunk)
    n = (3 * k + 5) * chunk
    plan = A.plan(n, [(chunk * (k + 2) + 100, 4000)], chunk, k)
    buf = vmm.MappedBuffer(plan)
    try:
        pattern = np.arange(4096, dtype=np.int32)
        buf.fill_physical(pattern)
        own = np.full(1000, -7, dtype=np.int32)
        buf.upload(own, chunk * (k + 2) + 100)
        assert (buf.download(np.int32, 4096, n - 2 * chunk) == pattern).all()  # shared, far down the range
        shared = [p for p in plan.pieces if p.phys == A.SHARED]
        buf.upload(np.full(10, 99, dtype=np.int32), shared[0].first * chunk)
        assert (buf.download(np.int32, 10, shared[1].first * chunk) == 99).all()  # one allocation, two places
        assert (buf.download(np.int32, 1000, chunk * (k + 2) + 100) == own).all()  # the private chunk kept its own
    finally:
        buf.close()


def test_torch_sees_the_mapping_and_writes_through_it():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip(f"needs a CUDA build of torch (this is {torch.__version__})")
    from verifier.launch import large
    from verifier.launch.large import _Mapped, _Torch

    mem = _Mapped(_Torch("cuda"), np.array([0, 3]), torch_views=True)
    try:
        out = mem.output((8, 1024), "bfloat16", 0x7FC1, None, stride=2 ** 31 + 64)
        t = out.view
        assert t.stride() == (2 ** 31 + 64, 1) and t.dtype == torch.bfloat16
        t[3] = 1.5
        torch.cuda.synchronize()
        assert (mem.rows(out, [3])[0].astype(np.float32) == 1.5).all()
        assert mem.guard_hits(out) == [] and mem.poison_counts(out)[0] == 1024  # row 0 still poison
    finally:
        mem.close()
    assert large.aliased()


def test_the_correct_row_kernel_passes_every_large_case_at_ci():
    """Correct on every large case (its cost, the issue's 1.5 s per kernel and dtype, is measured alone on the GPU
    by benchmarks/large_cases_ci_time.py: a timed assertion here failed under the eight workers sharing the GPU,
    1.95 s on an H100 on 2026-12-05)."""
    from verifier.battery import gate
    from verifier.battery.values import run_case
    from verifier.declare.registry import load_spec_file
    from verifier.inputs import large_family as C
    from verifier.inputs.cases import cases_for, draw
    from verifier.results.kernel import KernelReport
    from verifier.results.options import Options

    spec = next(k for k in load_spec_file(ROOT / "kernels/defects/cuda/defects.py") if k.name == "cuda-rmsnorm-rows")
    dt = spec.dtypes[0]
    cases = {c.name: c for c in cases_for(spec, dt, "ci")}
    warm = cases["normal_small"]
    run_case(spec, dt, warm.name, draw(spec, dt, warm, 0), Options(device="cuda"))  # builds and loads it
    for name in C.LARGE_CASES:
        c = cases[name]
        assert gate.before_inputs(spec, dt, c.name, c.M, c.N, c.layout, "cuda") is None, name
        report = run_case(spec, dt, c.name, draw(spec, dt, c, 0), Options(device="cuda"), layout=c.layout)
        assert not report.findings, (name, [f.message[:200] for f in report.findings])


# Which check a wrapped offset trips depends on what the wrapped address holds on that machine: on the H200
# (2026-12-05) the int32 offsets faulted (crash) and the unsigned one read another row (value); on an H100 the
# same day the int32 row offset read mapped memory (value, invariant). Any error on the large case is the catch.
CAUGHT_BY = {"crash", "value", "invariant", "nan-inf", "unwritten"}


@pytest.mark.parametrize("kernel, case", [
    ("defect-cuda-rmsnorm-int32-row-offset", "large_index_2pow31"),
    ("defect-cuda-rmsnorm-unsigned-row-offset", "large_index_2pow32"),
    ("defect-cuda-rmsnorm-int32-row-stride", "row_stride_2pow31"),
])
def test_each_offset_defect_fails_its_large_case_at_ci(kernel, case):
    import json
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "verifier.cli", "check", "kernels/defects/cuda/defects.py", "--kernel",
                        kernel, "--case", case, "--level", "ci", "--device", "cuda", "--format", "json",
                        "--no-progress"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    k = json.loads(p.stdout)["kernels"][0]
    caught = {f["check"] for f in k["findings"] if f["severity"] == "error" and f["input"] == case} & CAUGHT_BY
    assert k["verdict"] == "fail" and caught, p.stdout[-2000:]

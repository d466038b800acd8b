"""Outputs at a declared layout (``output_layout``) on a GPU: a CUDA router writing its ids rows n_expert apart (ggml's
topk_moe layout, tests/data/output_layout/) passes, its twin writing them k apart fails with unwritten rows and
padding writes, in the large case too (rows on aliased pages); ``verifier bench`` and compiled Triton's resource capture
allocate the output at its declared layout (a kernel writing past a contiguous one would corrupt device memory)."""
from __future__ import annotations

from pathlib import Path

import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "tests" / "data" / "output_layout" / "topk_rows_spec.py"

_REASON = gpu_and_nvcc_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def _torch_reason():
    try:
        import torch
    except ImportError as e:
        return f"needs torch ({e})"
    if not torch.cuda.is_available():
        return f"needs a CUDA build of torch (this is {torch.__version__})"
    return None


_TORCH_REASON = _torch_reason() if _REASON is None else None
needs_torch = pytest.mark.skipif(_TORCH_REASON is not None, reason=_TORCH_REASON or "")


def _kernels():
    from verifier.declare.registry import load_spec_file

    return {k.name: k for k in load_spec_file(SPECS)}


def _check(spec, level="quick", case=None):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    return check_kernel(spec, Options(level=level, device="cuda", case=case))


def test_ids_n_expert_apart_pass_and_the_k_apart_twin_fails():
    ks = _kernels()
    ok = _check(ks["topk-ids-at-e"])
    assert ok.verdict == "pass" and not ok.findings, [f.message for f in ok.findings]
    bad = _check(ks["topk-ids-at-k-defect"])
    checks = {f.check for f in bad.findings}
    assert bad.verdict == "fail" and {"unwritten", "out-of-range-write"} <= checks, [f.message for f in bad.findings]
    assert any("padding of its declared layout" in f.message for f in bad.findings)


def test_the_large_case_lays_the_declared_rows_on_aliased_pages():
    from verifier.launch.large import aliased

    if not aliased():
        pytest.skip("device 0 has no CUDA virtual memory API (aliased pages): the case is listed as not run")
    ks = _kernels()
    r = _check(ks["topk-ids-at-e"], level="ci", case="large_index_2pow31")
    assert r.verdict == "pass" and not r.findings and r.judged.get("f32"), ([f.message for f in r.findings], r.notes)
    bad = _check(ks["topk-ids-at-k-defect"], level="ci", case="large_index_2pow31")
    assert bad.verdict == "fail" and "unwritten" in {f.check for f in bad.findings}, [f.message for f in bad.findings]


@needs_torch
def test_bench_times_the_router_at_its_declared_layout():
    from verifier.bench.timing import declared_outputs, make_inputs
    from verifier.spec import dtypes

    spec = _kernels()["topk-ids-at-e"]
    _, outputs = make_inputs(spec.op, 64, 128, dtypes("f32"), params=spec.op_params())
    outputs.update(declared_outputs(spec, outputs, 64, 128))
    assert outputs["indices"].stride() == (128, 1) and outputs["values"].is_contiguous()


@needs_torch
def test_compiled_triton_runs_at_the_declared_layout(tmp_path):
    """The compiled path (resource capture allocates its own outputs) and the values step, on the top-2 router of
    tests/test_output_layout_triton.py (its ids rows E apart)."""
    from test_output_layout_triton import MODULE
    from verifier.battery import check_kernel
    from verifier.launch.triton import triton_mode
    from verifier.results.options import Options
    from verifier.spec import RowStride, TritonKernel, dtypes

    if triton_mode() == "interpreter":
        pytest.skip("this process runs Triton in the interpreter (VERIFIER_TRITON_MODE / TRITON_INTERPRET)")
    path = tmp_path / "out_layout_kernels.py"
    path.write_text(MODULE)
    spec = TritonKernel(name="top2-at-e", op="topk_softmax", module=str(path), launcher="top2_at_e",
                        dtypes=[dtypes("f32")], params={"k": 2}, output_layout={"indices": RowStride("N")},
                        supports=lambda M, N, dt: None if 2 <= N <= 4096 else "one block per row")
    r = check_kernel(spec, Options(level="quick", device="cuda", case="normal_small"))  # (NaN rows: not its aim)
    assert r.verdict == "pass" and not r.findings, [f.message for f in r.findings]

"""FlashInfer's MergeStateKernel on a GPU (kernels/third_party/flashinfer/merge_state_spec.py, from the pinned
headers): two empty states (both lse -inf) merge to v = 0 and lse = -inf, as its max() and d_sum > 0 guards make
them and its spec declares (empty="zero": declared NaN before, the H100 run of 2026-12-05 showed the zeros); its
only other findings are its uint32 offsets past 2^32 elements."""
from __future__ import annotations

from pathlib import Path

import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parent.parent
_REASON = gpu_and_nvcc_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]
SPEC = ROOT / "kernels" / "third_party" / "flashinfer" / "merge_state_spec.py"
WRAPS = "large_index_2pow32"  # cascade.cuh's (pos * num_heads + head_idx) * head_dim in uint32


def test_flashinfer_merge_state_passes_but_for_its_uint32_offsets():
    from verifier.battery import check_kernel
    from verifier.declare.registry import load_spec_file
    from verifier.results.options import Options

    spec = {k.name: k for k in load_spec_file(SPEC)}["flashinfer-merge-state"]
    why = spec.unavailable()
    if why:
        pytest.skip(f"FlashInfer's headers are not installed here: {why}")
    report = check_kernel(spec, Options(level="ci", device="cuda"))
    others = [f for f in report.findings if f.input != WRAPS and f.severity != "warning"
              and not (f.check == "static" and f.message.startswith("offset-wrap") and f"at {WRAPS} " in f.message)]
    assert not others, "\n".join(f"{f.check} {f.dtype} {f.input}: {f.message}" for f in others)
    assert any(r for r in report.judged.values()), "nothing judged"

"""The routing-family CUDA kernels on a GPU (kernels/cuda/routing_spec.py, merge_states_spec.py): each passes its
whole battery at the 'ci' level (values, tie-aware picks, invariants, poison and guards, determinism), and on exact ties picks the
smaller index as vLLM's kernel does (a right choice the tie-aware comparison must accept); the merge keeps a NaN lse
beside an empty state (NaN, not the both-empty result)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parent.parent
_REASON = gpu_and_nvcc_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]

ROUTING = ROOT / "kernels" / "cuda" / "routing_spec.py"
MERGE = ROOT / "kernels" / "cuda" / "merge_states_spec.py"


def _specs(path):
    from verifier.declare.registry import load_spec_file

    return {k.name: k for k in load_spec_file(path)}


_ALL = [(ROUTING, n) for n in ("cuda-topk-softmax", "cuda-topk-softmax-renorm-i64", "cuda-topk-sigmoid-k1")] + \
       [(MERGE, n) for n in ("cuda-merge-attn-states", "cuda-merge-attn-states-base2-zero")]


@pytest.mark.parametrize("path,name", _ALL, ids=[n for _, n in _ALL])
def test_routing_family_cuda_kernel_passes_its_battery(path, name):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    report = check_kernel(_specs(path)[name], Options(level="ci", device="cuda"))
    assert report.verdict == "pass", "\n".join(f"{f.check} {f.dtype} {f.input}: {f.message}" for f in report.findings)


def test_topk_cuda_kernel_breaks_ties_toward_the_smaller_index():
    from verifier.launch.cuda import run_cuda
    from verifier.launch.harness import execute
    from verifier.spec import dtypes

    spec = _specs(ROUTING)["cuda-topk-softmax"]
    x = (np.random.default_rng(0).integers(0, 4, size=(8, 64)) * 0.5).astype(np.float32)
    out = execute(run_cuda, spec, {"x": x}, dtypes("f32"), spec.op_params(), "cuda").outputs
    g = np.exp(x - x.max(1, keepdims=True))
    want = np.argsort(-g, axis=1, kind="stable")[:, :8]
    assert (out["indices"] == want).all()


def test_merge_cuda_kernel_keeps_a_nan_lse_beside_an_empty_state():
    """torch.maximum (the reference's m) keeps a NaN lse: fmaxf would turn (NaN, -inf) into m = -inf, which the
    guarded kernel (empty='zero') reads as both empty and writes v = 0, lse = -inf."""
    import ml_dtypes

    from verifier.launch.cuda import run_cuda
    from verifier.launch.harness import execute
    from verifier.spec import dtypes

    spec = _specs(MERGE)["cuda-merge-attn-states-base2-zero"]
    rng = np.random.default_rng(0)
    bf = ml_dtypes.bfloat16
    inp = {"x": rng.standard_normal((4, 64)).astype(bf), "v_b": rng.standard_normal((4, 64)).astype(bf),
           "lse_a": np.array([np.nan, -np.inf, 1.0, -np.inf], np.float32),
           "lse_b": np.array([-np.inf, np.nan, 2.0, -np.inf], np.float32)}
    with np.errstate(all="ignore"):
        out = execute(run_cuda, spec, inp, dtypes("bf16"), spec.op_params(), "cuda").outputs
    v, lse = out["v"].astype(np.float32), out["lse"]
    assert np.isnan(v[:2]).all() and np.isnan(lse[:2]).all(), (v[:2, :4], lse[:2])
    assert np.isfinite(v[2]).all() and (v[3] == 0).all() and lse[3] == -np.inf

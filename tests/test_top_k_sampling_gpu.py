"""Sampling's top-k filters on a GPU: our CUDA kernels (kernels/cuda/top_k_sampling_spec.py) and FlashInfer's
single-CTA radix kernels (kernels/third_party/flashinfer/sampling_topk_spec.py, from the pinned headers) pass their
whole battery at the 'ci' level (values, tie-aware kept sets, invariants, poison and guards, determinism where
declared; FlashInfer's findings only where its uint32 row offset wraps, past 2^32 elements); on exact ties FlashInfer keeps every tie (ties='keep_all'), and its renorm turns an all-zero row into
zeros (max(sum, 1e-8)), both checked on the raw outputs as well."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parent.parent
_REASON = gpu_and_nvcc_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]

OURS = ROOT / "kernels" / "cuda" / "top_k_sampling_spec.py"
# FlashInfer's row offset is uint32 arithmetic (``logits + row_idx * vocab_size``, both uint32_t in topk.cuh): past
# 2^32 elements it wraps, a true finding on this case alone (rows past element 2^32 read and write earlier rows).
WRAPS = "large_index_2pow32"
FLASHINFER = ROOT / "kernels" / "third_party" / "flashinfer" / "sampling_topk_spec.py"


def _specs(path):
    from verifier.declare.registry import load_spec_file

    return {k.name: k for k in load_spec_file(path)}


def _flashinfer(name):
    spec = _specs(FLASHINFER)[name]
    why = spec.unavailable()
    if why:
        pytest.skip(f"FlashInfer's headers are not installed here: {why}")
    return spec


@pytest.mark.parametrize("name", ["cuda-top-k-renorm-probs", "cuda-top-k-renorm-probs-floor-k1",
                                  "cuda-top-k-mask-logits"])
def test_our_cuda_top_k_filter_passes_its_battery(name):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    report = check_kernel(_specs(OURS)[name], Options(level="ci", device="cuda"))
    assert report.verdict == "pass", "\n".join(f"{f.check} {f.dtype} {f.input}: {f.message}" for f in report.findings)


@pytest.mark.parametrize("name", ["flashinfer-top-k-renorm-probs-k1", "flashinfer-top-k-renorm-probs-k8",
                                  "flashinfer-top-k-mask-logits"])
def test_flashinfer_top_k_filter_passes_its_battery(name):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    report = check_kernel(_flashinfer(name), Options(level="ci", device="cuda"))
    # FlashInfer 0.7.4 forms row * N in 32 bits: the lint reads it in the PTX (a static offset-wrap naming the
    # WRAPS shape) and the large case shows it at run time (H100, 2026-12-05). Both are its finding, nothing else is.
    wraps = [f for f in report.findings if f.input == WRAPS
             or (f.check == "static" and f.message.startswith("offset-wrap") and f"at {WRAPS} " in f.message)]
    errors = [f for f in report.findings if f.severity == "error" and f not in wraps]
    assert report.verdict in ("pass", "fail") and not errors, "\n".join(
        f"{f.check} {f.dtype} {f.input}: {f.message}" for f in errors)
    assert {f.check for f in wraps} >= {"static", "unwritten"}, "FlashInfer's 32-bit row offset went unseen"


def _run(spec, x):
    from verifier.launch.cuda import run_cuda
    from verifier.launch.harness import execute
    from verifier.spec import dtypes

    return execute(run_cuda, spec, {"x": x}, dtypes("f32"), spec.op_params(), "cuda").outputs


def test_flashinfer_mask_keeps_every_tie_at_the_kth_largest():
    spec = _flashinfer("flashinfer-top-k-mask-logits")
    x = (np.random.default_rng(0).integers(0, 4, size=(8, 64)) * 0.5).astype(np.float32)
    out = _run(spec, x)["masked"]
    kth = -np.sort(-x, axis=1)[:, 7:8]
    np.testing.assert_array_equal(out, np.where(x >= kth, x, -np.inf))
    assert ((out > -np.inf).sum(axis=1) > 8).any()  # ties made some rows keep more than k


def test_flashinfer_renorm_turns_an_all_zero_row_into_zeros():
    spec = _flashinfer("flashinfer-top-k-renorm-probs-k8")
    p = np.zeros((4, 64), dtype=np.float32)
    p[1:, :16] = 1.0 / 16
    out = _run(spec, p)["renormed"]
    assert (out[0] == 0).all() and np.isfinite(out).all()


def test_our_renorm_keeps_a_nan_kept_sum_nan_under_a_sum_floor():
    """k >= N keeps a NaN, so the kept sum is NaN: max(sum, sum_floor) must stay NaN as the op's reference
    (torch.clamp) gives it, never the floor (fmaxf(NaN, floor) = floor wrote p / 1e-8 for the finite entries)."""
    import torch

    from verifier.ops.top_k_sampling import renorm_reference

    spec = _specs(OURS)["cuda-top-k-renorm-probs"]
    params = {**spec.op_params(), "k": 8, "sum_floor": 1e-8}
    x = np.full((2, 6), 1.0 / 6, dtype=np.float32)
    x[0, 2] = np.nan
    from verifier.launch.cuda import run_cuda
    from verifier.launch.harness import execute
    from verifier.spec import dtypes

    out = execute(run_cuda, spec, {"x": x}, dtypes("f32"), params, "cuda").outputs["renormed"]
    want = renorm_reference({"x": torch.from_numpy(x)}, params)["renormed"].numpy()
    assert np.isnan(want[0]).all()
    np.testing.assert_array_equal(out, want)

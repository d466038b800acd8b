"""A user op whose reference depends on a row's place in the batch (one ALiBi slope per block of rows, as a ggml
softmax declared on an H100 on 2026-12-05 had): a large case hands the reference only its six judged rows, and a
reference counting its rows itself judged them as rows 0..5 — the kernel was reported wrong on 2 of 6 rows. Such a
reference now has the large cases left out with the fix (verifier.inputs.row_place); one reading
verifier.spec.row_numbers / batch_rows is judged on them, its rows where they really are."""
import numpy as np
import torch

from verifier.inputs.cases import large_left_out
from verifier.inputs.layouts import SparseRows
from verifier.judge import Criteria, judge
from verifier.spec import CallableKernel, Op, batch_rows, dtypes, row_numbers


def _counts_itself(i, p):  # slope 1/2 on the first half of the batch, 1/4 on the second: from its own row count
    M = i["x"].shape[0]
    slope = 0.5 ** (1.0 + (torch.arange(M) // (M // 2)).to(i["x"].dtype))
    return {"y": i["x"] * slope[:, None]}


def _reads_place(i, p):
    M = i["x"].shape[0]
    rows = torch.as_tensor(row_numbers(M))
    slope = 0.5 ** (1.0 + (rows // (batch_rows(M) // 2)).to(i["x"].dtype))
    return {"y": i["x"] * slope[:, None]}


COUNTS = Op("head_scale_counts", inputs={"x": "MxN"}, outputs={"y": "MxN"}, reference=_counts_itself)
READS = Op("head_scale_reads", inputs={"x": "MxN"}, outputs={"y": "MxN"}, reference=_reads_place)


def _spec(op):
    return CallableKernel(name=f"k-{op.name}", op=op, fn=lambda i, o, p, d: None, dtypes=[dtypes("f32")])


def test_a_reference_counting_its_own_rows_has_the_large_cases_left_out_with_the_fix():
    why = large_left_out(_spec(COUNTS))
    assert why and "depends on a row's place" in why and "row_numbers" in why and "batch_rows" in why, why
    assert large_left_out(_spec(READS)) is None


def test_judging_six_rows_of_a_large_batch_gives_the_reference_their_real_place():
    from verifier.ops import get_op

    spec = _spec(READS)
    M, N = 65600, 8
    rows = np.array([0, 65534, 65535, 65536, 65598, 65599])
    rng = np.random.default_rng(0)
    vals = {int(r): rng.standard_normal(N).astype(np.float32) for r in rows}
    x = SparseRows((M, N), np.dtype(np.float32), vals, rng.standard_normal(64).astype(np.float32))
    slope = {int(r): 0.5 if r < M // 2 else 0.25 for r in rows}
    y = SparseRows((M, N), np.dtype(np.float32), {r: (v * slope[r]).astype(np.float32) for r, v in vals.items()},
                   np.zeros(64, np.float32))
    verdict = judge(Criteria.of(spec, dtypes("f32")), {"x": x}, {"y": y}, rows=rows)
    assert verdict.ok, [f.message for f in verdict.comparison.findings(kernel="k")][:2]
    assert get_op(spec.op).name == "head_scale_reads"

"""The case ce_many_short_rows (cross_entropy_reduced, 2049 rows of 16 classes): a kernel that picks rows per program
from M (attorch's cross entropy: 2 rows per program from 2048 rows when N < 64) and sizes its per-program partials
M // rows_per_program drops the last row of an odd batch from the mean. No other case has more than 13 rows, so such
a kernel passed every case before (a silent pass, attorch 67c2772b). The kernels here are our own models."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from verifier.battery import check_kernel
from verifier.inputs.catalogue import catalogue
from verifier.results.options import Options
from verifier.spec import CallableKernel, dtypes

F32 = dtypes("f32")
CASE = Options(level="ci", device="cpu", case="ce_many_short_rows")


def _partials(rows_per_program_from_m: bool):
    def fn(inputs, outputs, params, dt):
        x, t = inputs["x"].float(), inputs["labels"]
        M, N = x.shape
        per = 2 if rows_per_program_from_m and M >= 2048 and N < 64 else 1
        loss = F.cross_entropy(x, t, reduction="none") / M
        parts = loss[: (M // per) * per].view(-1, per).sum(1)  # the floor: an odd M loses its last row
        return {"loss": parts.sum().reshape(1)}
    return fn


def test_the_case_is_in_the_reduced_catalogue_only():
    assert any(c.name == "ce_many_short_rows" and (c.M, c.N) == (2049, 16)
               for c in catalogue("cross_entropy_reduced", F32, "ci"))
    assert not any(c.name == "ce_many_short_rows" for c in catalogue("cross_entropy", F32, "ci"))


def test_a_reduction_losing_the_last_row_fails_and_a_right_one_passes():
    p = {"ignore_index": None, "reduction": "mean"}
    bad = check_kernel(CallableKernel(name="ce-pairs-floor", op="cross_entropy_reduced", fn=_partials(True),
                                      dtypes=[F32], params=p), CASE)
    assert bad.verdict == "fail" and any(f.check == "value" and f.input == "ce_many_short_rows" for f in bad.findings)
    good = check_kernel(CallableKernel(name="ce-pairs", op="cross_entropy_reduced", fn=_partials(False),
                                       dtypes=[F32], params=p), CASE)
    assert good.verdict == "pass", [f.message for f in good.findings]

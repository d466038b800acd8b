"""logsumexp: x[M,N] -> lse[M] float32, the row's log-sum-exp alone, as kernels that keep only the softmax's
normalizer write it (Tri Dao's Triton logsumexp, a split-KV partial's lse, an online-softmax finalizer that leaves y
to a later pass). The softmax family's lse (verifier/ops/softmax_lse.py) as an op of its own: the same logits (the
family's params and optional inputs: scale, softcap, ALiBi, mask, causal, sinks), the same base (``lse_base``), the
same contract for a row with no finite lse (``lse_nonfinite``, open for every kernel: NaN as m + log(sum exp(z - m))
gives it while undeclared) and the same budget."""
from __future__ import annotations

from verifier.ops import softmax_lse
from verifier.ops.contract import Contract
from verifier.ops.model import Op, Tensor
from verifier.ops.softmax import logit_units, row_softmax, softmax_parts
from verifier.ops.softmax_inputs import CASES, OPTIONAL, PARAMS

OPDEF = Op(
    "logsumexp", inputs={"x": "MxN", **OPTIONAL}, outputs={"lse": Tensor("M", dtype="float32")},
    params={**PARAMS, "lse_base": "e", "lse_nonfinite": None},
    contract_params={"lse_nonfinite": Contract(softmax_lse.NONFINITE)}, reference="references.logsumexp",
    recipe=dict(softmax_lse.RECIPE), kappas=softmax_lse.kappas(logit_units, softmax_parts, row_softmax),
    online_override=True, exp_family=True, cases=CASES,
    description="the row's log-sum-exp alone (float32), in base e or 2, after the softmax family's transforms",
)

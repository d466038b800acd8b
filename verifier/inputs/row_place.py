"""Whether an op's reference can judge a large case: those cases judge six rows of a batch of up to 262,208 and hand
the reference only those rows (verifier.judge, ``rows=``). A reference whose result depends on a row's place in the
batch (a causal mask, one ALiBi slope per block of rows) must read it from ``verifier.spec.row_numbers`` /
``batch_rows``; one that counts its rows itself judged the six as rows 0..5 and reported the kernel wrong (a ggml
softmax with ALiBi heads, declared as a user op, on an H100 on 2026-12-05). A user op's reference is probed once:
rows 3, 6 and 7 of an 8-row draw, referenced alone with their real numbers, must equal those rows of the whole batch's
reference; where they do not, the large cases are not run, with the fix."""
from __future__ import annotations

from typing import Optional

import numpy as np

_M, _N, _PICK = 8, 16, (3, 6, 7)  # not from row 0, not evenly spaced: a row count or index of its own shows


def row_place_reason(spec) -> Optional[str]:
    """Why a large case cannot judge this kernel's op (None: it can): its reference ignores the rows' real place."""
    from verifier.ops import BUNDLED, get_op

    op = get_op(spec.op)
    if op in BUNDLED or not spec.dtypes:  # the bundled references read row_numbers where their semantics need it
        return None
    dt, p = spec.dtypes[0], spec.op_params()
    key = (id(op), op.name, dt.tag, repr(sorted(p.items())))
    if key not in _SEEN:
        _SEEN[key] = _probe(spec.op, op, dt, p)
    return _SEEN[key]


_SEEN: dict = {}  # one probe per op, dtype and params in a process


def _probe(name, op, dt, p: dict) -> Optional[str]:
    from references import reference
    from verifier.inputs import catalogue
    from verifier.ops.row_numbers import judged_rows

    try:
        xs = catalogue.maker(_M, _N, catalogue.rand_normal)(np.random.default_rng(0), dt, name, p)
        xs = {k: np.asarray(v) for k, v in xs.items()}
        whole = reference(name, xs, p, dt.output).exact
        pick = np.asarray(_PICK)
        part_in = {k: (v[pick] if op.per_row(k) else v) for k, v in xs.items()}
        with judged_rows(pick, total=_M):
            part = reference(name, part_in, p, dt.output).exact
    except Exception:  # noqa: BLE001 - the reference's own errors are reported where a case runs it
        return None
    for t, v in part.items():
        if not op.per_row(t):
            continue
        want = np.asarray(whole[t], dtype=np.float64)[pick]
        if not np.allclose(np.asarray(v, dtype=np.float64), want, rtol=1e-12, atol=0.0, equal_nan=True):
            return (f"not run: op {op.name!r}'s reference gives rows {list(_PICK)} of a batch of {_M} other values "
                    f"alone than within the batch ({t!r} differs): it depends on a row's place, and a large case "
                    "hands it only the judged rows. Fix: read the rows' real numbers in the reference, "
                    "verifier.spec.row_numbers(len(x)) and batch_rows(len(x)) (docs/specs.md, 'Your own ops')")
    return None

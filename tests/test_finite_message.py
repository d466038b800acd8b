"""The softmax family's finite invariant says why a row must be finite: a row holding -inf (masked columns) and
finite logits is live, and "although their input is finite" misdescribed it (aiter's online softmax gave NaN on
such rows)."""
import numpy as np

from verifier.numerics.errmodel import Ctx
from verifier.numerics.violations import finite_violation
from verifier.ops.softmax import check_softmax
from verifier.numerics.errmodel import worst_intrinsics


def test_a_nan_row_with_masked_columns_names_them():
    x = np.array([[-np.inf, -np.inf, 0.5, 1.0], [0.1, 0.2, 0.3, 0.4]])
    y = np.array([[np.nan] * 4, [0.25] * 4])
    c = Ctx(u=2.0 ** -24, eta=0.0, intr=worst_intrinsics("float32"), online=False, N=4)
    (v,) = [v for v in check_softmax(x, y, c) if v.invariant == "softmax.finite"]
    assert "at least one logit above -inf" in v.message and "their input is finite" not in v.message


def test_other_ops_keep_their_reason():
    (v,) = finite_violation("rmsnorm.finite", np.array([True]), np.array([[np.nan, 1.0]]))
    assert "although their input is finite" in v.message

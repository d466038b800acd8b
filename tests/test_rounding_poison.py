"""An unwritten output element holds the harness's poison, a signalling NaN (verifier.launch.outcome.POISON): the
rounding statistics leave it out without numpy's 'invalid value encountered in cast' RuntimeWarning, which
`verifier check` printed in the middle of its report on every large-index case a kernel left unwritten (FLA's l2norm,
SGLang's dual-residual RMSNorm, mamba's gated norm: int32 row offsets past 2^31 elements)."""
import warnings

import numpy as np

from verifier.judge.rounding import rounding_stats
from verifier.launch.outcome import POISON


def test_a_poisoned_element_is_left_out_without_a_warning():
    actual = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    actual.view(np.int32)[1] = POISON["float32"][0]
    assert np.isnan(actual[1])
    y = np.array([1.0, 2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st = rounding_stats(actual, y.astype(np.float32), y, np.zeros(3), None, 1.0, "float32")
    assert st is not None and st.n == 2  # the two written elements, both correctly rounded

"""A dynamic quantizer without a floor may write any finite positive scale for an all-zero row (aiter writes 1):
y = 0 dequantizes to x = 0 under it. The pair is judged, not the scale alone: y must then be 0
(tests/data/blind_tri6/zero_row_scale_spec.py)."""
from pathlib import Path

import pytest

SPEC = Path(__file__).parent / "data" / "blind_tri6" / "zero_row_scale_spec.py"


def _check(case):
    from verifier.battery import check_kernel
    from verifier.declare.registry import load_spec_file
    from verifier.results.options import Options

    return {k.name: check_kernel(k, Options(level="quick", device="cpu", case=case)) for k in load_spec_file(str(SPEC))}


@pytest.mark.parametrize("case", ["zero_rows", "mixed_magnitudes"])
def test_a_zero_rows_own_scale_passes_with_y_zero_and_fails_with_y_nonzero(case):
    got = _check(case)
    good, bad = got["ptq-zero-row-scale-one"], got["ptq-zero-row-scale-one-y-one"]
    assert good.verdict == "pass", [f.message for f in good.findings][:3]
    assert bad.verdict == "fail", bad.notes
    assert any(f.check == "value" and "'y'" not in f.message and "y:" in f.message for f in bad.findings), \
        [f.message for f in bad.findings][:3]
    assert not any(f.message.startswith("scale") for f in bad.findings), [f.message for f in bad.findings][:3]

"""A Triton kernel's load outside its tensor, in the interpreter: the read lands in the guard band the harness lays
around every tensor and is an `out-of-range-read` finding, also where the value read is discarded and every output is
right (FlagGems' cross entropy read x[row·C - 100] for ignored rows and multiplied it by 0: a silent pass before).
A correct kernel reads none (verifier.launch.interpreter_reads)."""
from pathlib import Path

import pytest

from verifier.battery import check_kernel
from verifier.declare.registry import load_spec_file
from verifier.results.options import Options

SPEC = Path(__file__).parent / "data" / "guard_reads" / "rowsum_spec.py"
pytestmark = pytest.mark.interpreter


def _check(name):
    spec = {k.name: k for k in load_spec_file(SPEC)}[name]
    return check_kernel(spec, Options(level="quick", device="cpu"))


def test_a_read_before_the_row_discarded_by_the_kernel_is_an_out_of_range_read():
    r = _check("rowsum-peek")
    reads = [f for f in r.findings if f.check == "out-of-range-read"]
    assert reads and r.verdict == "fail", [f.message for f in r.findings][:3]
    assert "tensor 'x'" in reads[0].message and "bytes before its first element" in reads[0].message
    assert not [f for f in r.findings if f.check == "value"]  # its values are right: only the read shows it


def test_a_correct_kernel_reads_no_guard():
    r = _check("rowsum-ok")
    assert r.verdict == "pass" and not r.findings, [f.message for f in r.findings][:3]

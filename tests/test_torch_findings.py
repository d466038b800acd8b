"""What the framework found in PyTorch's own CPU ops, kept as regression tests of its sensitivity."""
import dataclasses


from verifier.battery import check_kernel
from verifier.results.options import Options
from verifier.declare.registry import load_spec_file
from verifier.spec import dtypes


def _log_softmax_spec():
    (k,) = [k for k in load_spec_file("kernels/torch/spec.py") if k.name == "torch-log-softmax"]
    return k


def test_torch_cpu_bf16_log_softmax_is_not_fp32_accumulated():
    # Declared with fp32 accumulation, torch's CPU bf16 log_softmax fails on 2-element rows: it rounds
    # the row sum to bf16 before the log (exp(0) + exp(-2.11) = 1.121 -> 1.125; log gives 0.1178, not 0.1145).
    claimed = dataclasses.replace(_log_softmax_spec(), dtypes=[dtypes("bf16")])
    report = check_kernel(claimed, Options(level="quick", seed=0, device="cpu", case="hypothesis:7x2:rng0"))
    assert report.verdict == "fail"
    assert {f.check for f in report.findings} >= {"value"}


def test_declared_as_bf16_accumulation_it_passes_the_same_case():
    spec = dataclasses.replace(_log_softmax_spec(), dtypes=[dtypes("bf16", acc="bf16")])
    report = check_kernel(spec, Options(level="quick", seed=0, device="cpu", case="hypothesis:7x2:rng0"))
    assert report.verdict == "pass", [f.message for f in report.findings]

"""Row sums (the block all-reduce kernels): every registered reduce_sum kernel x declared dtype x adversarial case.

Kernels: bundled kernels/ (not kernels/defects/), --verifier-specs PATH, and the kernel_verifier.specs entry
point group; cases: verifier.cases.cases_for (catalogue of --verifier-budget plus the boundary case).
Ids: test_reduce_sum[KERNEL-DTYPE-CASE]. Each test is one battery step (verifier.plugin.checker.Checker).
"""
import pytest

pytestmark = pytest.mark.verifier(op="reduce_sum")


def test_reduce_sum(verifier_check, verifier_kernel, verifier_dtypes, verifier_case, verifier_inputs):
    verifier_check.values(verifier_kernel, verifier_dtypes, verifier_case, verifier_inputs)


def test_reduce_sum_shapes(verifier_check, verifier_kernel, verifier_dtypes):
    verifier_check.shapes(verifier_kernel, verifier_dtypes)


def test_reduce_sum_refusal(verifier_check, verifier_kernel, verifier_dtypes):
    verifier_check.refusal(verifier_kernel, verifier_dtypes)


def test_reduce_sum_determinism(verifier_check, verifier_kernel, verifier_dtypes):
    verifier_check.determinism(verifier_kernel, verifier_dtypes)


def test_reduce_sum_build(verifier_check, verifier_kernel):
    verifier_check.build(verifier_kernel)


def test_reduce_sum_static(verifier_check, verifier_kernel):
    verifier_check.static(verifier_kernel)

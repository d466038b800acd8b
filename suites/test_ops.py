"""The per-op suites, generated from the op registry: for every op in verifier.ops.OPS, six tests marked
``pytest.mark.verifier(op=...)`` and parametrized over that op's registered kernels (bundled kernels/ minus
kernels/defects/, --verifier-specs PATH, and the kernel_verifier.specs entry point group):

    test_<op>[KERNEL-DTYPE-CASE]       values on every adversarial case (verifier.inputs.cases.cases_for)
    test_<op>_shapes[KERNEL-DTYPE]     Hypothesis shapes
    test_<op>_refusal[KERNEL-DTYPE]    refused shapes are refused cleanly
    test_<op>_determinism[KERNEL-DTYPE]
    test_<op>_build[KERNEL]            compiles (CUDA: ptxas)
    test_<op>_static[KERNEL]           lint and resource contracts

Each test is one battery step (verifier.plugin.checker.Checker). A test that could only skip on this machine (a
CUDA kernel's launches without a GPU, a case the kernel refuses, a Triton build without a GPU) is not generated:
one line at the end of the session counts them, with the reasons (verifier.plugin.session.known_skip). One op's suite: ``pytest suites/test_ops.py
-k test_softmax`` (-k matches names as substrings: test_softmax does not select test_log_softmax). A new op in
verifier/ops needs no file here.
"""
import pytest

from verifier.ops import OPS


def _suite(op: str) -> dict:
    def values(verifier_check, verifier_kernel, verifier_dtypes, verifier_case, verifier_inputs):
        verifier_check.values(verifier_kernel, verifier_dtypes, verifier_case, verifier_inputs)

    def shapes(verifier_check, verifier_kernel, verifier_dtypes):
        verifier_check.shapes(verifier_kernel, verifier_dtypes)

    def refusal(verifier_check, verifier_kernel, verifier_dtypes):
        verifier_check.refusal(verifier_kernel, verifier_dtypes)

    def determinism(verifier_check, verifier_kernel, verifier_dtypes):
        verifier_check.determinism(verifier_kernel, verifier_dtypes)

    def build(verifier_check, verifier_kernel):
        verifier_check.build(verifier_kernel)

    def static(verifier_check, verifier_kernel):
        verifier_check.static(verifier_kernel)

    tests = {"": values, "_shapes": shapes, "_refusal": refusal, "_determinism": determinism, "_build": build,
             "_static": static}
    out = {}
    for suffix, fn in tests.items():
        name = f"test_{op}{suffix}"
        fn.__name__ = fn.__qualname__ = name
        # step: the plugin does not generate a test that could only skip here (it says how many in one line)
        out[name] = pytest.mark.verifier(op=op, step=suffix[1:] or "values")(fn)
    return out


for _op in OPS:
    globals().update(_suite(_op))

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
verifier/ops needs no file here. The tests themselves are verifier.plugin.suites's, which a user's project gets
without this file (``pytest --verifier-specs PATH``).
"""
from verifier.ops import OPS
from verifier.plugin.suites import suite_tests

for _op in OPS:
    globals().update(suite_tests(_op))

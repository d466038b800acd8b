"""The ``interpreter`` fixture: this test process runs Triton in its interpreter (skipped where the process runs
Triton compiled: a process cannot switch mode). Tests import it: ``from interpreter_process import interpreter``."""
import os

import pytest

from verifier.launch.triton import activate, triton_mode


@pytest.fixture(scope="module")
def interpreter():
    if os.environ.get("VERIFIER_TRITON_MODE", "") == "compiled" or triton_mode() != "interpreter":
        pytest.skip("this process runs Triton compiled; these tests concern the interpreter")
    activate("interpreter")

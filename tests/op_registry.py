"""The ``registry`` fixture: user ops a test registers leave verifier.ops.OPS as it was (tests import it)."""
import pytest

from verifier.ops import OPS


@pytest.fixture
def registry():
    before = dict(OPS)
    yield
    OPS.clear()
    OPS.update(before)

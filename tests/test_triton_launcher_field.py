"""A TritonKernel's launcher is the name of a function in its module (imported in Triton's mode for the run). A
function passed instead (a spec tried on Tri Dao's Triton logsumexp did) used to pass the declaration and end the
run with an internal error in verifier/launch/triton.py ("attribute name must be string"): a user's mistake, now a
SpecError at declaration naming the fix."""
import pytest

from verifier.spec import SpecError, TritonKernel, dtypes


def _launch(inputs, outputs, params, dt):
    pass


def test_a_launcher_function_is_a_spec_error_naming_the_fix():
    with pytest.raises(SpecError, match="launcher='_launch' is a function") as e:
        TritonKernel(name="k", op="softmax", module="softmax.py", launcher=_launch, dtypes=[dtypes("f32")])
    assert "launcher='launch'" in e.value.fix and "CallableKernel" in e.value.fix


def test_a_launcher_name_is_accepted():
    k = TritonKernel(name="k", op="softmax", module="softmax.py", launcher="launch", dtypes=[dtypes("f32")])
    assert k.launcher == "launch"

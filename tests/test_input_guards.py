"""Inputs between guards (verifier.launch.harness.execute): each input's buffer holds the dtype's largest finite
value on both sides of its elements, so a read past an input's end changes the result the same way in every run
(before, it read whatever followed the allocation: the `or` argmax twin of tests/test_interpreter_boolops.py passed
in one CI run out of several), and a write there is an input-clobbered finding naming the guard. The sanitizer's
child leaves the guards out: memcheck sees a read past the allocation itself."""
import numpy as np
import torch

from verifier.battery import check_kernel
from verifier.launch.harness import GUARD_BYTES, execute
from verifier.launch.callable import run_callable
from verifier.results.options import Options
from verifier.spec import CallableKernel, dtypes

F32 = dtypes("f32")


def _past_end(inputs):
    """The element right after x's last one, read through x's storage, as a kernel indexing one past it does."""
    x = inputs["x"]
    return torch.as_strided(x, (1,), (1,), x.storage_offset() + x.numel())


def reads_one_past_the_end(inputs, outputs, params, dt):
    y = torch.softmax(inputs["x"].float(), -1)
    y[-1, -1] += _past_end(inputs)[0] * 1e-38  # the value read matters where it is large
    return {"y": y}


def writes_one_past_the_end(inputs, outputs, params, dt):
    _past_end(inputs)[0] = 0.0
    return {"y": torch.softmax(inputs["x"].float(), -1)}


def _spec(fn):
    return CallableKernel(name=fn.__name__.replace("_", "-"), op="softmax", fn=fn, dtypes=[F32])


def test_a_read_past_the_end_sees_the_largest_finite_value_and_only_with_the_guard():
    seen = []

    def run(spec, inputs, outputs, params, dt, device):
        x = inputs["x"]
        room = x.untyped_storage().nbytes() > (x.storage_offset() + x.numel()) * 4
        seen.append((float(_past_end(inputs)[0]) if room else None, x.storage_offset() * 4,
                     x.untyped_storage().nbytes()))
        outputs["y"].copy_(torch.softmax(inputs["x"], -1))

    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    spec = _spec(reads_one_past_the_end)
    execute(run, spec, {"x": x}, F32, spec.op_params(), "cpu")
    assert seen[-1] == (float(np.finfo(np.float32).max), GUARD_BYTES, 2 * GUARD_BYTES + x.nbytes)
    execute(run, spec, {"x": x}, F32, spec.op_params(), "cpu", check_poison=False, input_guard=False)
    assert seen[-1] == (None, 0, x.nbytes)  # the sanitizer's layout: the allocation ends at the tensor


def test_a_kernel_whose_result_depends_on_a_read_past_the_end_fails_every_run():
    for _ in range(2):
        r = check_kernel(_spec(reads_one_past_the_end), Options(level="quick", device="cpu"))
        assert r.verdict == "fail", [f.message for f in r.findings][:3]


def test_a_write_past_the_end_is_input_clobbered_naming_the_guard():
    r = check_kernel(_spec(writes_one_past_the_end), Options(level="quick", device="cpu"))
    (f,) = [f for f in r.findings if f.check == "input-clobbered"][:1]
    assert "after its last element (its guard)" in f.message, f.message

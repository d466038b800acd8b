"""Workspace(values=...): a device buffer the host fills before the call (the dims and strides candle copies to the
device for its reduce kernels' ``info`` argument). Before, a workspace was only uninitialized scratch, so such a
kernel could not be declared. Its contents are checked where the launches are bound, on any machine."""
import numpy as np
import pytest

from verifier.declare.registry import load_spec_file
from verifier.errors import SpecError
from verifier.launch.cuda import bind_model, launches_for, model_tensors
from verifier.spec import Workspace, dtypes
from pathlib import Path

SPEC = Path(__file__).resolve().parent / "data" / "workspace_values" / "dims_sum_spec.py"


def test_contents_are_the_declared_numbers():
    ws = Workspace("info", 4, "int64", values=lambda M, N: (M, N, N, 1))
    got = ws.contents(3, 7)
    assert got.dtype == np.int64 and got.tolist() == [3, 7, 7, 1]
    assert Workspace("w", 2, "float32", values=(0.5, 2.0)).contents(1, 1).tolist() == [0.5, 2.0]
    assert Workspace("scratch", 4).contents(3, 7) is None  # uninitialized, as before


@pytest.mark.parametrize("values, what", [(lambda M, N: (M, N), "2 numbers for 4 elements"),
                                          (lambda M, N: (M, N, 2 ** 63, 1), "out of range for int64"),
                                          (lambda M, N: 5, "not a sequence")])
def test_values_that_do_not_fit_are_a_spec_error(values, what):
    with pytest.raises(SpecError, match=what):
        Workspace("info", 4, "int64", values=values).contents(3, 7)


def test_the_launch_binding_checks_them_on_any_machine():
    spec = next(k for k in load_spec_file(str(SPEC)) if k.name == "dims-sum")
    dt = dtypes("f32")
    params = spec.op_params()
    (launch,) = launches_for(spec, 4, 64, dt, params)
    bind_model(spec, launch, 4, 64, dt, params, model_tensors(spec, 4, 64, dt, params))  # well formed: no error
    bad = Workspace("info", 4, "int64", values=lambda M, N: (M, N))
    import dataclasses
    with pytest.raises(SpecError, match="2 numbers for 4 elements"):
        bind_model(spec, dataclasses.replace(launch, args=(bad, "x", "y")), 4, 64, dt, params,
                   model_tensors(spec, 4, 64, dt, params))

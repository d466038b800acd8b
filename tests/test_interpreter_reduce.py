"""tl.reduce with a combine function of the kernel's own runs in the interpreter as a pairwise tree over slices
(verifier/launch/interpreter_reduce.py), about log2(n) combine calls, not one per element: FlagGems' var_mean (a
Welford merge over up to 16,384 lanes) took tens of minutes per CPU check. The values are a tree order's, as
compiled Triton's; ties keep the combine's choice (tests/data/interp_reduce/custom_combine.py)."""
import importlib.util
import os

import numpy as np

from interpreter_process import interpreter  # noqa: F401 (the fixture)

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "interp_reduce", "custom_combine.py")


def _module():
    spec = importlib.util.spec_from_file_location("custom_combine_reduce", HERE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_custom_combine_reduces_as_a_tree_with_the_right_values(interpreter):
    import torch

    from verifier.launch.interpreter import watch

    mod = _module()
    x = torch.tensor(np.random.default_rng(0).standard_normal((3, 1000)), dtype=torch.float32)
    x[1, 7] = x[1, 700] = 9.0  # a tie: the lower index wins
    var, idx = torch.empty(3), torch.empty(3, dtype=torch.int32)
    with watch():
        mod.run(x, var, idx)
    assert mod.CALLS[0] <= 3 * 2 * 10, mod.CALLS[0]  # 3 rows, 2 reductions of 1024 lanes: 10 levels, not 1023
    assert idx.tolist() == [int(x[0].argmax()), 7, int(x[2].argmax())]
    np.testing.assert_allclose(var.numpy(), x.double().var(1, unbiased=False).numpy(), rtol=1e-5)

"""suites/test_ops.py generates the six tests of every op in the registry, each marked with its op."""
import importlib.util
from pathlib import Path

from verifier.ops import OPS

SUITE = Path(__file__).resolve().parents[1] / "suites" / "test_ops.py"


def test_every_registered_op_gets_its_six_marked_tests():
    spec = importlib.util.spec_from_file_location("generated_op_suites", SUITE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    tests = {n: f for n, f in vars(mod).items() if n.startswith("test_")}
    want = {f"test_{op}{s}" for op in OPS for s in ("", "_shapes", "_refusal", "_determinism", "_build", "_static")}
    assert set(tests) == want
    for name, fn in tests.items():
        (mark,) = [m for m in fn.pytestmark if m.name == "verifier"]
        op = mark.kwargs["op"]
        assert name == f"test_{op}" or name.startswith(f"test_{op}_") and name[len(f"test_{op}_"):] in (
            "shapes", "refusal", "determinism", "build", "static")
        assert fn.__name__ == name
    assert "test_cross_entropy" in tests and "test_softmax_build" in tests
    assert not [p.name for p in SUITE.parent.glob("test_*.py") if p.name not in ("test_ops.py", "test_detection_matrix.py")]

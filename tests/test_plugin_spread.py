"""verifier.plugin.spread: tests marked verifier_spread are placed at even intervals, the rest keep their order;
and the detection matrix is collected that way (one xdist worker got the whole module before)."""
import subprocess
import sys
from pathlib import Path

from child_sessions import NO_HYPOTHESIS_PLUGIN

from verifier.plugin.spread import MARKER, spread

ROOT = Path(__file__).resolve().parents[1]


class _Item:
    def __init__(self, name, heavy):
        self.name, self.heavy = name, heavy

    def get_closest_marker(self, name):
        return object() if self.heavy and name == MARKER else None


def test_marked_items_are_spread_evenly_and_orders_are_kept():
    items = [_Item(f"h{i}", True) for i in range(4)] + [_Item(f"l{i}", False) for i in range(16)]
    spread(items)
    names = [it.name for it in items]
    assert [names.index(f"h{i}") for i in range(4)] == [0, 5, 10, 15]
    assert [n for n in names if n.startswith("l")] == [f"l{i}" for i in range(16)]


def test_nothing_or_everything_marked_leaves_the_order():
    for flag in (False, True):
        items = [_Item(f"x{i}", flag) for i in range(5)]
        spread(items)
        assert [it.name for it in items] == [f"x{i}" for i in range(5)]


def test_the_detection_matrix_is_spread_through_the_suites():
    out = subprocess.run([sys.executable, "-m", "pytest", "suites", "--collect-only", "-q", "-p", "no:xdist",
                          "-p", "no:cacheprovider", *NO_HYPOTHESIS_PLUGIN], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    ids = [line for line in out.stdout.splitlines() if "::" in line]
    where = [i for i, nodeid in enumerate(ids) if nodeid.startswith("suites/test_detection_matrix.py")]
    assert len(where) >= 30, out.stdout[-2000:] + out.stderr[-2000:]  # tests that could only skip are not collected
    gaps = [b - a for a, b in zip(where, where[1:])]
    assert min(gaps) >= len(ids) // len(where) - 1  # never two matrix tests in a row, as collected alone

"""pytest plugin (registered through the ``pytest11`` entry point as ``verifier``).

Options (group "kernel-verifier"):
  --verifier-device cpu|cuda|auto   where kernels run (default auto)
  --verifier-kernels GLOB           only kernels whose name matches (comma-separated globs)
  --verifier-budget quick|ci|thorough
  --verifier-seed N                 base seed of every random draw
  --verifier-specs PATH             extra spec files/directories whose kernels join the suites (repeatable)
  --verifier-sanitize               re-run the GPU tests of the selected kernels under compute-sanitizer

Markers: gpu, sanitizer, slow, interpreter. Fixtures: ``verifier_options`` (a battery Options),
``verifier_kernels`` (the selected kernel specs), ``verifier_rng`` (a seeded numpy Generator per test).
"""
from __future__ import annotations

import os
import zlib

import pytest

from verifier.errors import UsageError

BUDGETS = ("quick", "ci", "thorough")
DEVICES = ("cpu", "cuda", "auto")
MARKERS = {
    "gpu": "needs a CUDA GPU (skipped with the reason on CPU machines)",
    "sanitizer": "runs under compute-sanitizer",
    "slow": "long-running",
    "interpreter": "runs Triton kernels under TRITON_INTERPRET=1",
}


def pytest_addoption(parser):
    g = parser.getgroup("kernel-verifier", "kernel-verifier: GPU reduction kernel checks")
    g.addoption("--verifier-device", default=os.environ.get("VERIFIER_DEVICE", "auto"), help="cpu | cuda | auto")
    g.addoption("--verifier-kernels", default=os.environ.get("VERIFIER_KERNEL"), metavar="GLOB",
                help="only kernels whose name matches (comma-separated globs)")
    g.addoption("--verifier-budget", default=os.environ.get("VERIFIER_BUDGET", "ci"), help="quick | ci | thorough")
    g.addoption("--verifier-seed", default=os.environ.get("VERIFIER_SEED", "0"), help="base seed")
    g.addoption("--verifier-specs", action="append", default=[], metavar="PATH",
                help="spec files or directories whose kernels join the suites")
    g.addoption("--verifier-sanitize", action="store_true", default=False,
                help="re-run the GPU tests of the selected kernels under compute-sanitizer")


def _validated(config) -> dict:
    dev = config.getoption("--verifier-device")
    budget = config.getoption("--verifier-budget")
    seed = config.getoption("--verifier-seed")
    if dev not in DEVICES:
        raise pytest.UsageError(f"--verifier-device {dev!r}: choose one of {', '.join(DEVICES)}")
    if budget not in BUDGETS:
        raise pytest.UsageError(f"--verifier-budget {budget!r}: choose one of {', '.join(BUDGETS)}")
    try:
        seed = int(seed)
    except ValueError:
        raise pytest.UsageError(f"--verifier-seed {seed!r}: must be an integer") from None
    return {"device": dev, "budget": budget, "seed": seed}


def pytest_configure(config):
    for name, doc in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    config._verifier = _validated(config)
    _activate_triton()
    try:
        from hypothesis import settings

        settings.register_profile("verifier-quick", max_examples=5, deadline=None)
        settings.register_profile("verifier-ci", max_examples=25, deadline=None)
        settings.register_profile("verifier-thorough", max_examples=200, deadline=None)
    except ImportError:  # hypothesis is a dependency; be lenient for users running a bare pytest
        pass


def _activate_triton():
    """Commit the process to compiled or interpreted Triton before any test module imports triton:
    importing triton fixes the mode of its own tl.sum / tl.max (see verifier/runners/triton.py)."""
    import importlib.util

    if importlib.util.find_spec("triton") is None:
        return
    from verifier.runners.triton import activate

    activate(os.environ.get("VERIFIER_TRITON_MODE") or None)


@pytest.fixture(scope="session")
def verifier_options(pytestconfig):
    from verifier.battery import Options, resolve_device

    v = pytestconfig._verifier
    try:
        device = resolve_device(v["device"])
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None
    return Options(budget=v["budget"], seed=v["seed"], device=device,
                   sanitize=pytestconfig.getoption("--verifier-sanitize"))


@pytest.fixture
def verifier_rng(request, pytestconfig):
    import numpy as np

    seed = zlib.crc32(f"{pytestconfig._verifier['seed']}:{request.node.nodeid}".encode())
    return np.random.default_rng(seed)

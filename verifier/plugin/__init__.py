"""The library behind verifier.pytest_plugin, whose hooks only wire pytest to it (as pytest-xdist's do):
session.py (options, registered kernels, parametrization, the process's CUDA state), checker.py (the suite
tests' bodies: one battery step each), children.py (child pytest processes: the poisoned-context fallback and
compute-sanitizer re-runs)."""

"""The names every stage agrees on, defined once: devices, compute-sanitizer tools, exit codes, pytest markers,
run levels' names and the environment variables that set options.
"""
from __future__ import annotations

# Where kernels run: 'auto' resolves to 'cuda' when a GPU is usable here (verifier.gpu.probe), else 'cpu'.
DEVICES = ("cpu", "cuda", "auto")

# compute-sanitizer tools, in the order reports list them.
SANITIZER_TOOLS = ("racecheck", "memcheck", "synccheck", "initcheck")

# Exit codes of `verifier check`, `verifier sanitize`, `verifier lint` and `verifier bench`.
EXIT_OK = 0  # every kernel passed
EXIT_FINDINGS = 1  # findings (an error in a spec's own code included)
EXIT_USAGE = 2  # a bad option, path or spec file
EXIT_INTERNAL = 3  # a bug in kernel-verifier
EXIT_NOTHING_CHECKED = 4  # every kernel was skipped: never reads as a pass
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_TERMINATED = 143  # SIGTERM (128 + 15): children killed and temporary folders removed, as after Ctrl-C

# Run levels (the effort of a run), cheapest first; verifier.results.levels says what each runs.
LEVELS = ("quick", "ci", "thorough")
DEFAULT_LEVEL = "ci"

# Markers the pytest plugin registers (verifier.pytest_plugin), with their help text.
MARKERS = {
    "gpu": "needs a CUDA GPU (skipped with the reason on CPU machines)",
    "sanitizer": "runs under compute-sanitizer",
    "slow": "long-running",
    "verifier_spread": "a long test: placed at even intervals through the collection so that xdist gives such "
                       "tests to many workers (verifier.plugin.spread)",
    "interpreter": "runs Triton kernels under TRITON_INTERPRET=1",
    "verifier(op)": "parametrize the test over the registered kernels of op (a suite)",
    "verifier_rerun(tool)": "internal: a compute-sanitizer re-run of the test of the same id without the suffix",
    "verifier_spec_error(message)": "internal: the kernel's spec code raised while the suite was collected",
    "verifier_values_not_checked(message)": "internal: --verifier-require-values and the kernel's values cannot be "
                                            "checked on this machine",
}

ENV_PREFIX = "VERIFIER_"  # VERIFIER_<OPTION> sets an option of `verifier check` and of the plugin
KERNEL_TIMEOUT_ENV = "VERIFIER_KERNEL_TIMEOUT"

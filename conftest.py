"""Loads the kernel-verifier pytest plugin in a checkout that is not installed (no ``pip install -e .``, so no
``pytest11`` entry point): the suites then collect with it, from ``PYTHONPATH=.`` or pytest's rootdir on
``sys.path``. Installed, the entry point has the same name (the module path), and this second load is a no-op.

This repository's own tests follow the suites' rule: a test whose skip / skipif marks already say, at collection,
that it can only skip on this machine (no GPU, an optional package or capture not installed) is not run; the
plugin's last line counts it, with its reason, beside the suite tests it does not generate. So are the interpreter
tests (mark ``interpreter``) in a session that runs Triton compiled: a process cannot switch mode, and they would
skip in every worker that ran a compiled test first (``VERIFIER_TRITON_MODE=interpreter pytest -m interpreter``
runs them on such a machine).

Under ``pytest -n``, the workers share one run's lint results (``$VERIFIER_LINT_SHARE``, verifier.lint.step): the
suites' static tests and tests/test_lint_checks.py analyse the same bundled kernels, each entry once a run then.

Where PYTHONDONTWRITEBYTECODE is set, the session keeps bytecode under verifier's pycache, as ``verifier`` does
(verifier/toolchain/bytecode.py): the workers, the test modules' assertion rewriting and the hundred-odd Python
children the tests start (CLI runs, pytest sessions, isolation) then compile verifier and the tests once a machine."""
import os
import shutil
import tempfile

import pytest

from verifier.toolchain.bytecode import keep_bytecode

keep_bytecode()  # before the test modules are imported (rewritten) and before xdist starts its workers

pytest_plugins = ["verifier.pytest_plugin"]


@pytest.hookimpl(trylast=True)  # after the plugin, which counts the suite tests it left without a kernel its own way
def pytest_collection_modifyitems(config, items):
    from _pytest.skipping import evaluate_skip_marks  # pytest's own reading of skip / skipif marks

    from verifier.plugin.session import NOT_GENERATED

    compiled = _runs_triton_compiled()
    keep = []
    for item in items:
        skipped = evaluate_skip_marks(item)
        if skipped is None and compiled and item.get_closest_marker("interpreter") is not None:
            NOT_GENERATED[INTERPRETER_ELSEWHERE] += 1
        elif skipped is None:
            keep.append(item)
        else:
            NOT_GENERATED[skipped.reason] += 1
    items[:] = keep


INTERPRETER_ELSEWHERE = ("interpreter tests: this session runs Triton compiled (a GPU), and a process cannot switch "
                         "mode; run them in a session of their own: "
                         "VERIFIER_TRITON_MODE=interpreter pytest -m interpreter")


def _runs_triton_compiled() -> bool:
    """Whether this session's processes run Triton compiled (a GPU, no VERIFIER_TRITON_MODE=interpreter): the
    interpreter tests (mark ``interpreter``) could then only skip, in whichever worker a compiled test ran first."""
    from verifier.errors import VerifierError
    from verifier.launch.triton import triton_mode

    try:
        return triton_mode() == "compiled"
    except VerifierError:  # an unknown mode: the plugin reports it
        return False


_SHARE = "VERIFIER_LINT_SHARE"  # verifier.lint.step.SHARE_ENV (not imported: this module loads before the plugin)


def pytest_configure(config):
    """Every process of a session that does not run Triton compiled (no GPU) imports triton interpreted, whatever
    test imports it first: a test file run alone under ``-n`` would otherwise import it compiled through a spec file
    and fail to switch (the plugin commits a process only when it collects the suites or a verifier fixture).
    The xdist controller: a fresh directory for this run's lint results, inherited by the workers it starts."""
    if not _runs_triton_compiled():
        from verifier.launch.triton import prefer_interpreter

        prefer_interpreter()
    if config.getoption("numprocesses", None) and not hasattr(config, "workerinput") and not os.environ.get(_SHARE):
        config._lint_share = tempfile.mkdtemp(prefix="verifier-lint-share-")
        os.environ[_SHARE] = config._lint_share


def pytest_unconfigure(config):
    share = getattr(config, "_lint_share", None)
    if share:
        os.environ.pop(_SHARE, None)
        shutil.rmtree(share, ignore_errors=True)

"""pytest plugin: the hooks, each wiring pytest to a library call in verifier.plugin (as pytest-xdist's hooks do).

Loaded by the ``pytest11`` entry point named ``verifier.pytest_plugin`` (its module path) in an installed
checkout, and by the top-level ``conftest.py`` (``pytest_plugins``) in an uninstalled one: under one name, a
second load is a no-op.

Options (group "kernel-verifier"; each also read from VERIFIER_<NAME>):
  --verifier-device cpu|cuda|auto   where kernels run (default auto)
  --verifier-kernels GLOB           only kernels whose name matches (comma-separated globs)
  --verifier-level quick|ci|thorough  the run level: catalogue cases, Hypothesis examples (verifier.results.levels;
                                    default ci); --verifier-budget and VERIFIER_BUDGET are its older spellings
  --verifier-seed N                 base seed of every random draw
  --verifier-specs PATH             extra spec files/directories whose kernels join the suites (repeatable); in a
                                    project without suites/test_ops.py, their suites are generated
                                    (verifier.plugin.suites: node ids ``my_spec.py::test_softmax[...]``)
  --verifier-bundled                the bundled kernels get generated suites too (where no suite module runs them)
  --verifier-sanitize               re-run the GPU tests of the selected kernels under compute-sanitizer
  --verifier-sanitize-tool TOOL     which tool(s) those re-runs use (repeatable; default memcheck)
  --verifier-strict                 warnings (e.g. a spill no Expectations limit covers) fail the test
  --verifier-require-values         a values test that could not check values here (a CUDA kernel without a
                                    GPU) is generated and fails instead of being left out: for CI that must check values

Suites: a test module marked ``pytestmark = pytest.mark.verifier(op="softmax")`` is parametrized over the
registered kernels of that op (bundled ``kernels/`` minus ``kernels/defects/``, ``--verifier-specs`` paths,
and spec modules named by the ``kernel_verifier.specs`` entry point group), by the arguments it asks for:
``verifier_kernel`` (id ``NAME``), + ``verifier_dtypes`` (``NAME-TAG``), + ``verifier_case``
(``NAME-TAG-CASE``, the cases of :func:`verifier.inputs.cases.cases_for`). Kernel names are kept whole: a name
shortened only while unique would change the ids of bundled kernels when a user kernel joins.
The ``verifier_check`` fixture runs one battery step and fails with the framework's report and repro lines
(verifier.plugin.checker). A generated suite test (marked ``verifier(op=..., step=...)``, as suites/test_ops.py
does) that could only skip on this machine — a CUDA kernel's launches without a GPU, a case the kernel's
supports() refuses, a sanitizer re-run without a GPU — is not generated; the session's last line counts them,
with the reasons (verifier.plugin.session.known_skip).

Inert in a session that selects no verifier test: no Hypothesis profile, no environment change. The process
is committed to compiled or interpreted Triton (TRITON_INTERPRET) only when a suite module is parametrized or
a collected test uses a verifier fixture.

GPU handling (see verifier/gpu/pinning.py): each xdist worker is pinned to one GPU before CUDA initializes;
``-n auto`` starts CPUs/GPUs workers per GPU. A CUDA fault leaves the process's context unusable, so after one the
remaining kernel tests of that process run each in a child ``pytest NODEID`` (poisoned-context fallback);
``--verifier-sanitize`` adds a ``-memcheck`` item per GPU test, run in a child under compute-sanitizer.

Marker ``verifier_spread``: a long test, placed at even intervals through the collection so that xdist's
consecutive-run scheduling hands such tests to many workers instead of one (verifier/plugin/spread.py).
"""
from __future__ import annotations

import os
from collections import Counter

import pytest

from verifier.constants import DEFAULT_LEVEL as SUITE_LEVEL
from verifier.constants import MARKERS
from verifier.errors import UsageError
from verifier.gpu import pinning as gpu_pinning
from verifier.gpu.probe import physical_gpu_count

# verifier.plugin.* is imported inside the hooks that need it: this module is imported by every pytest session
# of the environment (the entry point), and the library pulls numpy and the battery (start-up time only; the
# library never imports this module, so the graph stays acyclic).
_FIXTURES = {"verifier_kernel", "verifier_dtypes", "verifier_case", "verifier_inputs", "verifier_options",
             "verifier_check"}


def pytest_addoption(parser):
    from verifier.constants import SANITIZER_TOOLS

    g = parser.getgroup("kernel-verifier", "kernel-verifier: GPU reduction kernel checks")
    env = os.environ.get
    g.addoption("--verifier-device", default=env("VERIFIER_DEVICE", "auto"), help="cpu | cuda | auto")
    g.addoption("--verifier-kernels", default=env("VERIFIER_KERNEL"), metavar="GLOB",
                help="only kernels whose name matches (comma-separated globs)")
    g.addoption("--verifier-level", "--verifier-budget", dest="verifier_level",
                default=env("VERIFIER_LEVEL", env("VERIFIER_BUDGET", SUITE_LEVEL)),
                help=f"run level: quick | ci | thorough (default {SUITE_LEVEL}; --verifier-budget is its older name)")
    g.addoption("--verifier-seed", default=env("VERIFIER_SEED", "0"), help="base seed")
    g.addoption("--verifier-specs", action="append", default=[], metavar="PATH",
                help="spec files or directories whose kernels join the suites")
    g.addoption("--verifier-bundled", action="store_true", default=env("VERIFIER_BUNDLED") == "1",
                help="generate suites for the bundled kernels too, beside the --verifier-specs ones (where no "
                     "suite module such as the checkout's suites/test_ops.py is collected)")
    g.addoption("--verifier-sanitize", action="store_true", default=env("VERIFIER_SANITIZE") == "1",
                help="re-run the GPU tests of the selected kernels under compute-sanitizer")
    g.addoption("--verifier-sanitize-tool", action="append", default=[], metavar="TOOL",
                help=f"tool of those re-runs: {' | '.join(SANITIZER_TOOLS)} (repeatable; default memcheck)")
    g.addoption("--verifier-strict", action="store_true", default=env("VERIFIER_STRICT") == "1",
                help="warnings (undeclared spills, stack, local memory) fail the test instead of being reported")
    g.addoption("--verifier-require-values", action="store_true", default=env("VERIFIER_REQUIRE_VALUES") == "1",
                help="a values test that cannot check values here (a CUDA kernel without a GPU) fails instead of "
                     "not being generated")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Pin this xdist worker to one GPU before conftests or tests can initialize CUDA."""
    if gpu_pinning.worker_index(os.environ.get("PYTEST_XDIST_WORKER")) is None:
        return
    changes = gpu_pinning.pinned_environment(os.environ, physical_gpu_count())
    if changes and gpu_pinning.cuda_initialized():
        import warnings

        warnings.warn(f"kernel-verifier: CUDA was initialized before the plugin could pin xdist worker "
                      f"{os.environ['PYTEST_XDIST_WORKER']} to one GPU, so it shares the default GPU; do not call "
                      "torch.cuda.* at import time in conftest.py or plugins")
        return
    os.environ.update(changes)


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own (CPU count): it is a firstresult hook
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: CPUs / GPUs workers per visible GPU (gpu_pinning.workers_per_gpu); xdist's CPU count
    without GPUs."""
    try:
        return gpu_pinning.auto_workers(os.environ, physical_gpu_count())
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_configure(config):
    from verifier.plugin import session, worker_crash

    for name, doc in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    config._verifier = session.validated(config)
    config._verifier["not_generated_before"] = Counter(session.NOT_GENERATED)  # counts of sessions run earlier here
    if not config._verifier["child"] and "PYTEST_XDIST_WORKER" not in os.environ:  # once per session
        from verifier.launch import warn_retired_env

        warn_retired_env()
    worker_crash.configure(config)  # a kernel that kills an xdist worker costs one test (see that module)


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session):
    """Check kernel options before collecting: raised while a module is collected, a usage error would be
    shown as that module's collection error. Without such options the kernels load lazily, on the first
    suite module, so runs without suites do not import the spec files."""
    from verifier.plugin.session import registered_kernels, resolved_device

    v = session.config._verifier
    if v["globs"] or v["specs"]:
        registered_kernels(session.config)
    if v["device"] != "auto":
        resolved_device(session.config)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    """A --verifier-specs spec file named on the command line (a repro line, a child run) is collected as its
    generated suites, not imported as a test module."""
    from verifier.plugin.suites import module_for

    return module_for(module_path, parent)


@pytest.hookimpl(tryfirst=True)  # before -k / -m deselect: the generated tests are selected as any other
def pytest_collection_modifyitems(session, config, items):
    """With --verifier-specs and no suite module collected (a user's project), the suites of those spec files are
    generated and appended (verifier.plugin.suites).
    A collected test that uses the plugin commits the process to compiled or interpreted Triton before any
    test runs (a suite module already did while it was parametrized); other sessions are left as they are.
    A generated suite test left with no kernel to run here is dropped (counted in the session's last line).
    Tests marked ``verifier_spread`` are spread through the collection (verifier.plugin.spread)."""
    from verifier.plugin.suites import add_generated

    add_generated(session, items)
    if any(item.get_closest_marker("verifier") or _FIXTURES & set(getattr(item, "fixturenames", ())) for item in items):
        from verifier.plugin.session import activate_triton

        activate_triton(config._verifier["device"])
    from verifier.plugin.session import drop_empty_suites

    drop_empty_suites(items)
    if any(item.get_closest_marker("verifier_spread") for item in items):
        from verifier.plugin.spread import spread

        spread(items)


def pytest_generate_tests(metafunc):
    marker = metafunc.definition.get_closest_marker("verifier")
    if marker is None:
        return
    from verifier.plugin.session import PARAMS, STEPS, suite_params

    op = marker.kwargs.get("op") or (marker.args[0] if marker.args else None)
    names = tuple(n for n in PARAMS if n in metafunc.fixturenames)
    if op is None or not names:
        return
    if names != PARAMS[:len(names)]:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: a suite test takes verifier_kernel, then "
                                "verifier_dtypes, then verifier_case (each needs the ones before it)")
    step = marker.kwargs.get("step")
    if step is not None and step not in STEPS:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: verifier(step={step!r}) is not a step; use one of "
                                f"{', '.join(STEPS)}")
    from verifier.plugin.suites import SPEC_FILE_ATTR

    origin = getattr(metafunc.module, SPEC_FILE_ATTR, None)  # a spec file's generated suites: its kernels only
    metafunc.parametrize(names, suite_params(metafunc.config, op, names, step, origin=origin))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    """The count of tests not generated, as collection left it: tests that run pytest sessions in this process
    (pytester) or ask for suite parameters count into the same module-level counter while they run."""
    v = getattr(session.config, "_verifier", None)
    if v is not None:
        v["not_generated_here"] = _collected_counts(v)


def _collected_counts(v) -> dict:
    from verifier.plugin.session import NOT_GENERATED

    return dict(NOT_GENERATED - v.get("not_generated_before", Counter()))


def pytest_sessionfinish(session):
    """An xdist worker hands the count of suite tests it did not generate to the controller."""
    if hasattr(session.config, "workeroutput"):
        v = session.config._verifier
        session.config.workeroutput["verifier_not_generated"] = v.get("not_generated_here", _collected_counts(v))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """The controller: every worker collects the same tests, so one worker's count is the session's."""
    counts = getattr(node, "workeroutput", {}).get("verifier_not_generated")
    if counts:
        node.config._verifier.setdefault("not_generated", counts)


def pytest_terminal_summary(terminalreporter, config):
    """One line: the tests not generated because on this machine they could only skip, and why (the suites', and
    any a conftest counts in verifier.plugin.session.NOT_GENERATED, as this repository's does for its own)."""
    from verifier.plugin.session import not_generated_line

    v = getattr(config, "_verifier", None)
    if v is None:
        return
    line = not_generated_line(v.get("not_generated") or v.get("not_generated_here") or _collected_counts(v))
    if line:
        terminalreporter.write_line(line)


def _not_parametrized(name):
    def fixture():
        pytest.fail(f"{name} is given only to tests of a module marked pytest.mark.verifier(op=...): "
                    "add `pytestmark = pytest.mark.verifier(op=\"softmax\")`", pytrace=False)

    fixture.__name__ = name
    return pytest.fixture(name=name)(fixture)


verifier_kernel = _not_parametrized("verifier_kernel")
verifier_dtypes = _not_parametrized("verifier_dtypes")
verifier_case = _not_parametrized("verifier_case")


@pytest.fixture(scope="session")
def verifier_options(pytestconfig):
    """The battery Options of this session (device resolved)."""
    from verifier.plugin.session import options

    return options(pytestconfig)


@pytest.fixture
def verifier_inputs(verifier_kernel, verifier_dtypes, verifier_case, verifier_options):
    """The case's inputs (numpy, input dtype), drawn exactly as ``verifier check --case`` draws them."""
    from verifier.inputs.cases import DrawTooLarge, draw

    try:
        return draw(verifier_kernel, verifier_dtypes, verifier_case, verifier_options.seed)
    except DrawTooLarge as e:  # a large case whose inputs this host cannot hold: the battery's words
        pytest.skip(f"case {verifier_case.name} not run: {e.reason}")


@pytest.fixture
def verifier_check(request, record_property, verifier_options):
    """Runs one battery step of one kernel and fails with the framework's report (verifier.plugin.checker)."""
    from verifier.plugin.checker import Checker

    return Checker(verifier_options, record_property, request.node.nodeid, request.config)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A kernel whose spec code raised while the suite was collected: its one test fails with that error; so does
    a values test that cannot check values here under --verifier-require-values."""
    marker = item.get_closest_marker("verifier_spec_error") or item.get_closest_marker("verifier_values_not_checked")
    if marker is not None:
        pytest.fail(marker.args[0], pytrace=False)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    from verifier.launch import runnable_reason
    from verifier.plugin import children
    from verifier.plugin.session import STATE, resolved_device

    if not children.kernel_item(pyfuncitem):
        return None
    rerun = pyfuncitem.get_closest_marker("verifier_rerun")
    if rerun is not None:
        children.sanitized_rerun(pyfuncitem, rerun.args[0])
        return True
    if not pyfuncitem.config._verifier["child"] and children.contain_worker_crash(pyfuncitem):
        return True
    if STATE.poisoned and not pyfuncitem.config._verifier["child"]:
        # Tests that skip here (a CUDA kernel without a GPU) touch no device: no child needed.
        if runnable_reason(pyfuncitem.callspec.params["verifier_kernel"], resolved_device(pyfuncitem.config)) is None:
            children.run_in_child(pyfuncitem)
            return True
    return None

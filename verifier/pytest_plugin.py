"""pytest plugin (registered through the ``pytest11`` entry point as ``verifier``).

Options (group "kernel-verifier"; each also read from VERIFIER_<NAME>):
  --verifier-device cpu|cuda|auto   where kernels run (default auto)
  --verifier-kernels GLOB           only kernels whose name matches (comma-separated globs)
  --verifier-budget quick|ci|thorough  catalogue size and Hypothesis profile (default: see SUITE_BUDGET)
  --verifier-seed N                 base seed of every random draw
  --verifier-specs PATH             extra spec files/directories whose kernels join the suites (repeatable)
  --verifier-sanitize               re-run the GPU tests of the selected kernels under compute-sanitizer
  --verifier-sanitize-tool TOOL     which tool(s) those re-runs use (repeatable; default memcheck)
  --verifier-strict                 warnings (e.g. a spill no Expectations limit covers) fail the test

Suites: a test module marked ``pytestmark = pytest.mark.verifier(op="softmax")`` is parametrized over the
registered kernels of that op (bundled ``kernels/`` minus ``kernels/defects/``, ``--verifier-specs`` paths,
and spec modules named by the ``kernel_verifier.specs`` entry point group), by the arguments it asks for:
``verifier_kernel`` (id ``NAME``), + ``verifier_dtypes`` (``NAME-TAG``), + ``verifier_case``
(``NAME-TAG-CASE``, the cases of :func:`verifier.battery.cases_for`). Kernel names are kept whole: a name
shortened only while unique would change the ids of bundled kernels when a user kernel joins.
The ``verifier_check`` fixture runs one battery step and fails with the framework's report and repro lines.

GPU handling (see verifier/gpu_pinning.py): each xdist worker is pinned to one GPU before CUDA initializes;
``-n auto`` starts CPUs/GPUs workers per GPU. A CUDA fault leaves the process's context unusable, so after one the
remaining kernel tests of that process run each in a child ``pytest NODEID`` (poisoned-context fallback);
``--verifier-sanitize`` adds a ``-memcheck`` item per GPU test, run in a child under compute-sanitizer.
"""
from __future__ import annotations

import fnmatch
import os
import shlex
import sys
import zlib
from pathlib import Path

import pytest

from verifier import gpu_pinning
from verifier.errors import UsageError

BUDGETS = ("quick", "ci", "thorough")
DEVICES = ("cpu", "cuda", "auto")
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
# The suites' default when neither --verifier-budget nor VERIFIER_BUDGET says otherwise (the CLI's is 'ci').
# Measured on a 2-core CPU machine: see benchmarks/ci_suite_time.py.
SUITE_BUDGET = "ci"
BUNDLED_KERNELS = Path(__file__).resolve().parent.parent / "kernels"
SKIPPED_BUNDLED_DIRS = ("defects",)  # catalogued defective kernels: the detection matrix's, not the suites'
ENTRY_POINT_GROUP = "kernel_verifier.specs"
CHILD_ENV = "VERIFIER_PYTEST_CHILD"  # set in child pytest runs: no re-isolation, no sanitizer re-runs
NO_GPU_SANITIZE = "no CUDA GPU: compute-sanitizer re-runs need one"
try:  # a bad value is reported by _validated() as a usage error naming the variable, not at import
    from verifier.isolate import environment_timeout as _environment_timeout

    CHILD_TIMEOUT_S = _environment_timeout()
except UsageError:
    CHILD_TIMEOUT_S = 600.0
MARKERS = {
    "gpu": "needs a CUDA GPU (skipped with the reason on CPU machines)",
    "sanitizer": "runs under compute-sanitizer",
    "slow": "long-running",
    "interpreter": "runs Triton kernels under TRITON_INTERPRET=1",
    "verifier(op)": "parametrize the test over the registered kernels of op (a suite)",
    "verifier_rerun(tool)": "internal: a compute-sanitizer re-run of the test of the same id without the suffix",
    "verifier_spec_error(message)": "internal: the kernel's spec code raised while the suite was collected",
}
_PARAMS = ("verifier_kernel", "verifier_dtypes", "verifier_case")


# --- options ---------------------------------------------------------------------------------------
def pytest_addoption(parser):
    g = parser.getgroup("kernel-verifier", "kernel-verifier: GPU reduction kernel checks")
    env = os.environ.get
    g.addoption("--verifier-device", default=env("VERIFIER_DEVICE", "auto"), help="cpu | cuda | auto")
    g.addoption("--verifier-kernels", default=env("VERIFIER_KERNEL"), metavar="GLOB",
                help="only kernels whose name matches (comma-separated globs)")
    g.addoption("--verifier-budget", default=env("VERIFIER_BUDGET", SUITE_BUDGET),
                help=f"quick | ci | thorough (default {SUITE_BUDGET})")
    g.addoption("--verifier-seed", default=env("VERIFIER_SEED", "0"), help="base seed")
    g.addoption("--verifier-specs", action="append", default=[], metavar="PATH",
                help="spec files or directories whose kernels join the suites")
    g.addoption("--verifier-sanitize", action="store_true", default=env("VERIFIER_SANITIZE") == "1",
                help="re-run the GPU tests of the selected kernels under compute-sanitizer")
    g.addoption("--verifier-sanitize-tool", action="append", default=[], metavar="TOOL",
                help=f"tool of those re-runs: {' | '.join(SANITIZER_TOOLS)} (repeatable; default memcheck)")
    g.addoption("--verifier-strict", action="store_true", default=env("VERIFIER_STRICT") == "1",
                help="warnings (undeclared spills, stack, local memory) fail the test instead of being reported")


def _validated(config) -> dict:
    opt = config.getoption
    dev, budget, seed = opt("--verifier-device"), opt("--verifier-budget"), opt("--verifier-seed")
    if dev not in DEVICES:
        raise pytest.UsageError(f"--verifier-device {dev!r}: choose one of {', '.join(DEVICES)}")
    if budget not in BUDGETS:
        raise pytest.UsageError(f"--verifier-budget {budget!r}: choose one of {', '.join(BUDGETS)}")
    try:
        seed = int(seed)
    except ValueError:
        raise pytest.UsageError(f"--verifier-seed {seed!r}: must be an integer") from None
    specs = []
    for p in opt("--verifier-specs"):
        if not Path(p).exists():
            raise pytest.UsageError(f"--verifier-specs {p}: no such file or directory "
                                    "(pass a spec file or a directory holding spec.py / *_spec.py files)")
        specs.append(str(Path(p).resolve()))
    tools = opt("--verifier-sanitize-tool") or ["memcheck"]
    bad = [t for t in tools if t not in SANITIZER_TOOLS]
    if bad:
        raise pytest.UsageError(f"--verifier-sanitize-tool {bad[0]!r}: choose one of {', '.join(SANITIZER_TOOLS)}")
    globs = [g.strip() for g in (opt("--verifier-kernels") or "").split(",") if g.strip()]
    try:
        from verifier.isolate import environment_timeout

        environment_timeout()
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None
    child = os.environ.get(CHILD_ENV) == "1"
    return {"device": dev, "budget": budget, "seed": seed, "specs": specs, "globs": globs,
            "sanitize": opt("--verifier-sanitize") and not child, "tools": list(dict.fromkeys(tools)),
            "child": child, "strict": bool(opt("--verifier-strict"))}


# --- GPU pinning and worker count (before CUDA initializes) ----------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Pin this xdist worker to one GPU before conftests or tests can initialize CUDA."""
    if gpu_pinning.worker_index(os.environ.get("PYTEST_XDIST_WORKER")) is None:
        return
    changes = gpu_pinning.pinned_environment(os.environ, gpu_pinning.count_physical_gpus())
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
        return gpu_pinning.auto_workers(os.environ, gpu_pinning.count_physical_gpus())
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None


# --- configure -------------------------------------------------------------------------------------
def pytest_configure(config):
    for name, doc in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    config._verifier = _validated(config)
    from verifier import worker_crash

    worker_crash.configure(config)  # a kernel that kills an xdist worker costs one test (see that module)
    _activate_triton(config._verifier["device"])
    try:
        from hypothesis import settings

        settings.register_profile("verifier-quick", max_examples=5, deadline=None)
        settings.register_profile("verifier-ci", max_examples=25, deadline=None)
        settings.register_profile("verifier-thorough", max_examples=200, deadline=None)
        if not getattr(config.option, "hypothesis_profile", None):  # an explicit --hypothesis-profile wins
            settings.load_profile(f"verifier-{config._verifier['budget']}")
    except ImportError:  # hypothesis is a dependency; be lenient for users running a bare pytest
        pass


def _activate_triton(device: str):
    """Commit the process to compiled or interpreted Triton before any test module imports triton:
    importing triton fixes the mode of its own tl.sum / tl.max (see verifier/runners/triton.py).
    Runs after GPU pinning: deciding the mode asks torch whether CUDA is available."""
    import importlib.util

    if importlib.util.find_spec("triton") is None:
        return
    from verifier.runners.triton import activate

    try:
        activate(os.environ.get("VERIFIER_TRITON_MODE") or ("interpreter" if device == "cpu" else None))
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session):
    """Check kernel options before collecting: raised while a module is collected, a usage error would be
    shown as that module's collection error. Without such options the kernels load lazily, on the first
    suite module, so runs without suites do not import the spec files."""
    v = session.config._verifier
    if v["globs"] or v["specs"]:
        registered_kernels(session.config)
    if v["device"] != "auto":
        resolved_device(session.config)


# --- registered kernels --------------------------------------------------------------------------
def bundled_spec_files(root: Path = BUNDLED_KERNELS) -> list:
    from verifier import registry

    if not root.is_dir():
        return []
    return [f for f in registry.find_spec_files([root])
            if not set(f.relative_to(root.resolve()).parts) & set(SKIPPED_BUNDLED_DIRS)]


def entry_point_spec_files() -> list:
    """Spec modules named by ``[project.entry-points."kernel_verifier.specs"] mine = "pkg.my_spec"``.
    The module is loaded as a spec file by path (not imported), like any other spec file."""
    import importlib.util
    from importlib.metadata import entry_points

    files = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            found = importlib.util.find_spec(ep.module)
        except (ImportError, ValueError):
            found = None
        if found is None or not found.origin or not found.origin.endswith(".py"):
            raise UsageError(f"entry point {ep.name} = {ep.value!r} (group {ENTRY_POINT_GROUP}) names no Python "
                             "module file", fix="point it at a spec module: mine = \"mypkg.kernels_spec\"")
        files.append(found.origin)
    return files


def registered_kernels(config) -> list:
    """Every selected kernel (cached per session); a broken spec or a glob matching nothing is a usage error."""
    v = config._verifier
    if "kernels" not in v:
        from verifier import registry

        try:
            paths = [str(f) for f in bundled_spec_files()] + v["specs"] + entry_point_spec_files()
            kernels = registry.load(paths) if paths else []
            if v["globs"]:
                kernels = [k for k in kernels if any(fnmatch.fnmatchcase(k.name, g) for g in v["globs"])]
                if not kernels:
                    raise UsageError(f"--verifier-kernels {','.join(v['globs'])} matches no registered kernel",
                                     fix="list them with `verifier list kernels/` (plus your --verifier-specs)")
        except UsageError as e:
            raise pytest.UsageError(str(e)) from None
        v["kernels"] = kernels
    return v["kernels"]


def resolved_device(config) -> str:
    v = config._verifier
    if "resolved" not in v:
        from verifier.battery import resolve_device

        try:
            v["resolved"] = resolve_device(v["device"])
        except UsageError as e:  # the battery names its CLI option
            raise pytest.UsageError(str(e).replace("--device", "--verifier-device")) from None
    return v["resolved"]


# --- parametrization -------------------------------------------------------------------------------
def _runs_on_gpu(spec, device: str) -> bool:
    return spec.kind == "cuda" or (device == "cuda" and (spec.kind == "triton" or getattr(spec, "device", "") == "cuda"))


def _marks(spec, device: str) -> list:
    if _runs_on_gpu(spec, device):
        return [pytest.mark.gpu]
    return [pytest.mark.interpreter] if spec.kind == "triton" else []


def pytest_generate_tests(metafunc):
    marker = metafunc.definition.get_closest_marker("verifier")
    if marker is None:
        return
    op = marker.kwargs.get("op") or (marker.args[0] if marker.args else None)
    names = tuple(n for n in _PARAMS if n in metafunc.fixturenames)
    if op is None or not names:
        return
    if names != _PARAMS[:len(names)]:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: a suite test takes verifier_kernel, then "
                                "verifier_dtypes, then verifier_case (each needs the ones before it)")
    config = metafunc.config
    device, v = resolved_device(config), config._verifier
    from verifier.battery import cases_for

    params = []
    for k in registered_kernels(config):
        if k.op != op:
            continue
        variants = [((k,), k.name)] if len(names) == 1 else [((k, d), f"{k.name}-{d.tag}") for d in k.dtypes]
        if len(names) == 3:
            from verifier.usercode import UserCodeError

            cased = []
            for vals, ident in variants:
                try:
                    cased += [(vals + (c,), f"{ident}-{c.name}") for c in cases_for(k, vals[1], v["budget"])]
                except UserCodeError as e:  # this kernel's error, one failing test; the others are collected
                    params.append(pytest.param(*vals, None, id=f"{ident}-spec-error",
                                               marks=[pytest.mark.verifier_spec_error(str(e))]))
            variants = cased
        for vals, ident in variants:
            params.append(pytest.param(*vals, id=ident, marks=_marks(k, device)))
            if v["sanitize"] and len(names) > 1 and k.kind in ("cuda", "triton"):
                params += [pytest.param(*vals, id=f"{ident}-{tool}", marks=[
                    pytest.mark.gpu, pytest.mark.sanitizer, pytest.mark.verifier_rerun(tool)])
                    for tool in v["tools"]]
    metafunc.parametrize(names, params)


# --- fixtures --------------------------------------------------------------------------------------
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
    from verifier.battery import Options

    v = pytestconfig._verifier
    return Options(budget=v["budget"], seed=v["seed"], device=resolved_device(pytestconfig), sanitize=v["sanitize"])


@pytest.fixture(scope="session")
def verifier_kernels(pytestconfig):
    """Every selected kernel spec (bundled, --verifier-specs, entry points; filtered by --verifier-kernels)."""
    return registered_kernels(pytestconfig)


@pytest.fixture
def verifier_rng(request, pytestconfig):
    import numpy as np

    seed = zlib.crc32(f"{pytestconfig._verifier['seed']}:{request.node.nodeid}".encode())
    return np.random.default_rng(seed)


@pytest.fixture
def verifier_inputs(verifier_kernel, verifier_dtypes, verifier_case, verifier_options):
    """The case's inputs (numpy, input dtype), drawn exactly as ``verifier check --case`` draws them."""
    import numpy as np

    from verifier.battery import derived_seed

    spec, dt = verifier_kernel, verifier_dtypes
    rng = np.random.default_rng(derived_seed(verifier_options.seed, spec.name, dt.tag, verifier_case.name))
    return verifier_case.make(rng, dt, spec.op, spec.op_params())


@pytest.fixture
def verifier_reference(verifier_kernel, verifier_dtypes, verifier_inputs):
    """The certified reference of those inputs (references.reference)."""
    from references import reference

    return reference(verifier_kernel.op, verifier_inputs, verifier_kernel.op_params(), verifier_dtypes.output)


@pytest.fixture(scope="session")
def verifier_artifacts(tmp_path_factory):
    """This process's artifact directory (sanitizer logs, child outputs): under xdist each worker's
    basetemp is its own subdirectory of the session's, so workers never share one."""
    return tmp_path_factory.getbasetemp() / "verifier-artifacts"


@pytest.fixture
def verifier_check(request, record_property, verifier_options):
    """Runs one battery step of one kernel and fails with the framework's report (see :class:`Checker`)."""
    return Checker(verifier_options, record_property, request.node.nodeid, request.config)


# --- isolation: poisoned CUDA context, sanitizer re-runs --------------------------------------------
class _State:
    poisoned: str | None = None  # the CUDA fault that made this process's context unusable


STATE = _State()


def worker_property() -> list:
    """[("worker", "gw3")] in a pytest-xdist worker, else []: junit then shows which worker (and GPU) ran a test."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return [("worker", worker)] if worker else []


def _kernel_item(item):
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "verifier_kernel" in callspec.params and "verifier_dtypes" in callspec.params


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A kernel whose spec code raised while the suite was collected: its one test fails with that error."""
    marker = item.get_closest_marker("verifier_spec_error")
    if marker is not None:
        pytest.fail(marker.args[0], pytrace=False)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    if not _kernel_item(pyfuncitem):
        return None
    rerun = pyfuncitem.get_closest_marker("verifier_rerun")
    if rerun is not None:
        sanitized_rerun(pyfuncitem, rerun.args[0])
        return True
    if not pyfuncitem.config._verifier["child"] and _contain_worker_crash(pyfuncitem):
        return True
    if STATE.poisoned and not pyfuncitem.config._verifier["child"]:
        from verifier.battery import runnable_reason

        # Tests that skip here (a CUDA kernel without a GPU) touch no device: no child needed.
        if runnable_reason(pyfuncitem.callspec.params["verifier_kernel"], resolved_device(pyfuncitem.config)) is None:
            run_in_child(pyfuncitem)
            return True
    return None


def _contain_worker_crash(item) -> bool:
    """Under xdist: a kernel that killed a worker runs its tests in child processes (True: this one ran);
    any other kernel test is noted first, so the controller can name it if the worker dies (verifier.worker_crash)."""
    from verifier import worker_crash
    from verifier.battery import repro_line, runnable_reason

    if not worker_crash._worker():
        return False
    spec, dt = item.callspec.params["verifier_kernel"], item.callspec.params["verifier_dtypes"]
    if worker_crash.crashed(spec.name):
        if runnable_reason(spec, resolved_device(item.config)) is not None:
            return False  # skips without touching the kernel
        run_in_child(item, why=worker_crash.CHILD_REASON)
        return True
    case = item.callspec.params.get("verifier_case")
    name = case.name if case is not None else next(
        (c for c in ("refusal", "determinism") if item.originalname.endswith("_" + c)), "")
    opts = item.funcargs.get("verifier_options") if hasattr(item, "funcargs") else None
    if opts is None:
        from verifier.battery import Options

        v = item.config._verifier
        opts = Options(budget=v["budget"], seed=v["seed"], device=resolved_device(item.config))
    worker_crash.note_running(item.nodeid, spec.name, repro_line(spec, opts, dt.tag, name),
                              repro_command(item.config, item.nodeid))
    return False


def child_command(config, nodeid: str, junit: str) -> list:
    """``python -m pytest NODEID`` with this session's verifier options, one process, no xdist."""
    v = config._verifier
    cmd = [sys.executable, "-m", "pytest", nodeid, "-p", "no:xdist", "-p", "no:cacheprovider", "-q", "-rs",
           f"--rootdir={config.rootpath}", f"--junitxml={junit}", "--verifier-device", v["device"],
           "--verifier-budget", v["budget"], "--verifier-seed", str(v["seed"])]
    if config.inipath:
        cmd += ["-c", str(config.inipath)]
    if config.pluginmanager.get_plugin("verifier") is None:
        # Loaded with `-p verifier.pytest_plugin` (an uninstalled checkout), not through the pytest11 entry
        # point: the child must load it the same way or it rejects the --verifier-* options.
        cmd += ["-p", "verifier.pytest_plugin"]
    for p in v["specs"]:
        cmd += ["--verifier-specs", p]
    if v["globs"]:
        cmd += ["--verifier-kernels", ",".join(v["globs"])]
    if v.get("strict"):
        cmd.append("--verifier-strict")
    return cmd


def repro_command(config, nodeid: str) -> str:
    """The pytest command line that re-runs one test with this session's options."""
    v = config._verifier
    parts = ["pytest", nodeid, "--verifier-budget", v["budget"], "--verifier-seed", str(v["seed"])]
    if v["device"] != "auto":
        parts += ["--verifier-device", v["device"]]
    for p in v["specs"]:
        rel = os.path.relpath(p, config.invocation_params.dir)
        parts += ["--verifier-specs", p if rel.startswith("..") else rel]
    return " ".join(shlex.quote(p) for p in parts)


def run_child(cmd: list, cwd, timeout: float = CHILD_TIMEOUT_S, extra_env: dict | None = None) -> tuple:
    """(exit code or None on timeout, combined output). Own session, so a timeout kills the whole tree."""
    # Not an xdist worker (though it keeps the worker's pinned CUDA_VISIBLE_DEVICES).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    env.update({CHILD_ENV: "1", **(extra_env or {})})
    from verifier.proc import run_killable

    return run_killable(cmd, timeout, env=env, cwd=cwd)


# --- running one battery step --------------------------------------------------------------------
class VerifierWarning(UserWarning):
    """A finding of severity warning: something undeclared (a spill with no limit declared) that passes."""


class _CudaFault(BaseException):
    """Stops Hypothesis at once (it would replay every shrink candidate in an unusable context)."""


def format_findings(findings) -> str:
    """Findings worst first, as the text report shows them: check class, where, message, repro line."""
    from verifier.report.model import sorted_findings
    from verifier.report.text import format_finding

    return "\n".join(line for f in sorted_findings(findings) for line in format_finding(f))


class Checker:
    """One battery step of one kernel per call, through the battery's own functions, so a suite test and
    ``verifier check`` judge the same input the same way (and the repro line re-runs exactly it).
    Fails with the findings (worst first) and the repro lines; junit gets the check class as property."""

    def __init__(self, opts, record_property, nodeid: str, config):
        from dataclasses import replace

        self.opts = replace(opts, sanitize=False)  # compute-sanitizer runs are their own items (-memcheck)
        self.record, self.nodeid, self.config = record_property, nodeid, config
        self.strict = bool(getattr(config, "_verifier", {}).get("strict"))

    # each method is one test's body
    def values(self, spec, dt, case, inputs):
        """One catalogue case: value (ULP budget), invariants, NaN/inf, unwritten outputs, guard bands."""
        from verifier import battery

        self._start(spec, dt, "value", case.name)
        from verifier.usercode import UserCodeError

        try:
            reason = spec.check_supported(case.M, case.N, dt)
        except UserCodeError as e:
            self._spec_error(e)
        if reason is not None:
            self._skip(f"case {case.name} ({case.M}x{case.N}) refused by design: {reason}")
        caveat = battery.interpreter_caveat(spec, dt, inputs, self.opts.device)
        if caveat:
            self._skip(caveat)
        from verifier.contracts import excluded

        contract = excluded(spec, inputs)
        if contract:
            self._skip(f"case {case.name} {contract}")
        report = self._report(spec)
        self._guarded(report, lambda: battery.run_case(spec, dt, case.name, inputs, self.opts, report))
        self._conclude(report, "value")

    def shapes(self, spec, dt):
        """Hypothesis-drawn shapes with random values (examples: the loaded verifier-<budget> profile);
        a failure is shrunk to the smallest failing shape and reported with its repro case."""
        import numpy as np
        from hypothesis import HealthCheck, given, settings
        from hypothesis import seed as hseed
        from hypothesis import strategies as st

        from verifier import battery
        from verifier.contracts import excluded

        self._start(spec, dt, "value", "hypothesis")
        opts = self.opts
        last: dict = {}

        @hseed(battery.derived_seed(opts.seed, spec.name, dt.tag, "hypothesis"))
        @settings(database=None, deadline=None, print_blob=False, report_multiple_bugs=False,
                  suppress_health_check=list(HealthCheck))
        @given(shape=battery.hypothesis_shapes(battery.hypothesis_max_cols(opts.device)),
               data_seed=st.integers(0, 2**31 - 1))
        def prop(shape, data_seed):
            M, N = shape
            if spec.check_supported(M, N, dt) is not None:
                return
            case = f"hypothesis:{M}x{N}:rng{data_seed}"
            xs = battery.random_inputs(spec, dt, M, N, np.random.default_rng(data_seed))
            if excluded(spec, xs):  # random normal values never hold NaN or inf; the rule has no exception
                return
            last["report"] = probe = self._report(spec)
            try:
                battery.run_case(spec, dt, case, xs, opts, probe)
            except Exception as e:
                if getattr(e, "cuda", False):
                    raise _CudaFault(e) from e
                raise
            if any(self._fails(f) for f in probe.findings):
                last["failed"] = list(probe.findings)
                raise AssertionError(case)  # the last one Hypothesis replays is the shrunk one

        from verifier.flaky import Flaky, flaky_finding
        from verifier.usercode import UserCodeError

        try:
            prop()
        except AssertionError:
            pass
        except _CudaFault as e:
            STATE.poisoned = str(e.args[0])
        except Flaky as e:  # an example failed, then passed on replay: a determinism finding, not an error
            report = self._report(spec)
            report.add(flaky_finding(spec, dt, opts, last.get("failed") or [], e))
            self._conclude(report, "value")
            return
        except UserCodeError as e:
            self._spec_error(e)
        self._conclude(last.get("report") or self._report(spec), "value")

    def build(self, spec):
        """CUDA: nvcc for the device's arch (sm_80 and sm_90 without a GPU), every launched entry present,
        ptxas resources within the spec's expectations. Triton on a GPU: the compiled kernels' resources."""
        from verifier import battery

        self.check = "build,resources"
        for k, val in worker_property():
            self.record(k, val)
        self.record("kernel", spec.name)
        if spec.kind != "cuda" and not (spec.kind == "triton" and self.opts.device == "cuda"):
            self._skip("nothing to build: " + ("Triton's compiled-kernel facts need a GPU" if spec.kind == "triton"
                                                 else "a Python callable"))
        report = self._report(spec)
        self._guarded(report, lambda: battery.check_build(spec, self.opts, spec.dtypes, report))
        for note in report.notes:
            self.record("note", note)
        if spec.kind == "cuda":  # a Triton kernel's build cells say only 'not a CUDA source'
            self._skip_if_skipped(report, "build")
        self._conclude(report, "build,resources")

    def static(self, spec):
        """CUDA: the static race/barrier checks of ``verifier lint`` on the PTX of the spec's source, for the
        build check's arches (no GPU needed, so CI runs them)."""
        from verifier.lint.driver import battery_hook

        self.check = "static"
        for k, val in worker_property():
            self.record(k, val)
        self.record("kernel", spec.name)
        if spec.kind != "cuda":
            self._skip("static analysis reads the PTX of CUDA sources; this is "
                       + ("a Triton kernel" if spec.kind == "triton" else "a Python callable"))
        report = self._report(spec)
        battery_hook(spec, self.opts, report, spec.dtypes)
        for f in report.findings:
            if f.severity == "warning":
                self.record("warning", f.message.splitlines()[0])
        self._skip_if_skipped(report, "static")
        self._conclude(report, "static")

    def refusal(self, spec, dt):
        """Shapes outside supports() are refused with verifier.errors.Unsupported, before any launch."""
        from verifier import battery

        self._start(spec, dt, "refusal", "refusal")
        report = self._report(spec)
        self._guarded(report, lambda: battery.check_refusal(spec, dt, self.opts, report))
        self._conclude(report, "refusal")

    def determinism(self, spec, dt):
        """Repeated runs on one input: bitwise equal if declared deterministic, else each within tolerance."""
        from verifier import battery

        self._start(spec, dt, "determinism", "determinism")
        report = self._report(spec)
        self._guarded(report, lambda: battery.check_determinism(spec, dt, self.opts, report))
        self._skip_if_skipped(report, "determinism")
        self._conclude(report, "determinism")

    # helpers
    def _start(self, spec, dt, check, case):
        from verifier.battery import runnable_reason

        self.check = check
        for k, val in (("kernel", spec.name), ("dtype", dt.tag), ("case", case)):
            self.record(k, val)
        for k, val in worker_property():
            self.record(k, val)
        if self.opts.device == "cuda":  # which GPU this worker was pinned to
            self.record("cuda_visible_devices", os.environ.get(gpu_pinning.VISIBLE, "(all)"))
        why = runnable_reason(spec, self.opts.device)
        if why:
            self._skip(why)

    def _report(self, spec):
        from verifier.battery import KernelReport

        return KernelReport(spec=spec, device=self.opts.device)

    def _guarded(self, report, step):
        """Run a step; a CUDA fault is recorded (by the battery) and poisons this process for later tests."""
        from verifier.battery import crash_finding
        from verifier.harness import KernelFault
        from verifier.usercode import UserCodeError

        try:
            step()
        except UserCodeError as e:
            self._spec_error(e)
        except KernelFault as e:
            if e.cuda:
                STATE.poisoned = str(e)
            if not getattr(e, "reported", False):
                report.add(crash_finding(report.spec, self.opts, e))

    def _spec_error(self, e):
        """The spec's own code raised (verifier.usercode): this kernel's error, not the plugin's."""
        self.record("check", "spec-error")
        pytest.fail(f"error in the spec's own code: {e}", pytrace=False)

    def _skip_if_skipped(self, report, check):
        cells = [v for (tag, c), v in report.cells.items() if c == check]
        if cells and all(v.startswith("skipped") for v in cells) and not report.findings:
            self._skip(cells[0][len("skipped("):-1])

    def _skip(self, reason: str):
        self.record("check", self.check)
        pytest.skip(reason)

    def _fails(self, finding) -> bool:
        """Whether a finding fails the test: errors, and warnings under --verifier-strict."""
        return finding.severity == "error" or (self.strict and finding.severity == "warning")

    def _conclude(self, report, check):
        """Record the check class (on failure: the failing ones, worst first) and fail with the findings.
        Warnings (without --verifier-strict) pass, but are shown: a junit property and a pytest warning."""
        errors = [f for f in report.findings if self._fails(f)]
        if not errors:
            self.record("check", check)
            warned = [f for f in report.findings if f.severity == "warning"]
            if warned:
                import warnings

                text = format_findings(warned)
                self.record("warning", text)
                warnings.warn(VerifierWarning(f"{len(warned)} warning(s) (--verifier-strict fails on them):\n{text}"))
            return
        from verifier.report.model import sorted_findings

        classes = ",".join(dict.fromkeys(f.check for f in sorted_findings(errors)))
        self.record("check", classes)
        self.record("repro", sorted_findings(errors)[0].repro)
        pytest.fail(f"{len(errors)} finding(s) [{classes}], worst first:\n{format_findings(errors)}\n"
                    f"pytest repro: {repro_command(self.config, self.nodeid)}", pytrace=False)


# --- children: poisoned-context fallback and compute-sanitizer re-runs ------------------------------
def _artifact_path(config, nodeid: str, suffix: str) -> Path:
    import re

    factory = getattr(config, "_tmp_path_factory", None)  # pytest's; xdist gives each worker its own basetemp
    base = factory.getbasetemp() if factory is not None else Path(os.environ.get("TMPDIR", "/tmp"))
    d = base / "verifier-artifacts"
    d.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^\w.-]+", "_", nodeid)[-100:]
    return d / f"{stem}-{zlib.crc32(nodeid.encode()):08x}{suffix}"


def junit_outcome(path) -> tuple | None:
    """(outcome, message, text, properties) of the one test in a child's junit file, or None."""
    import xml.etree.ElementTree as ET

    try:
        case = next(ET.parse(path).getroot().iter("testcase"), None)
    except (OSError, ET.ParseError):
        return None
    if case is None:
        return None
    props = [(p.get("name"), p.get("value")) for p in case.iter("property")]
    for kind in ("failure", "error", "skipped"):
        el = case.find(kind)
        if el is not None:
            return kind, el.get("message", ""), el.text or "", props
    return "passed", "", "", props


def _tail(text: str, n: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-n:]) or "(no output)"


def run_in_child(item, why: str | None = None):
    """Run one test in a fresh ``pytest NODEID`` process: this one's CUDA context is unusable (or ``why``)."""
    config = item.config
    junit = _artifact_path(config, item.nodeid, ".child.xml")
    code, out = run_child(child_command(config, item.nodeid, str(junit)), cwd=config.rootpath)
    item.user_properties.append(("isolated", why or f"child process (this worker's CUDA context is unusable after: "
                                                    f"{STATE.poisoned.splitlines()[0]})"))
    item.user_properties += worker_property()  # the child is not a worker: say whose test it ran
    outcome = junit_outcome(junit)
    if outcome is None:
        pytest.fail(f"the child pytest run of {item.nodeid} gave no result ("
                    f"{'timed out' if code is None else f'exit {code}'}); last output:\n{_tail(out)}\n"
                    f"pytest repro: {repro_command(config, item.nodeid)}", pytrace=False)
    kind, message, text, props = outcome
    item.user_properties.extend(props)
    if kind == "skipped":
        pytest.skip(message)
    if kind != "passed":
        pytest.fail(f"(ran in a child process)\n{text or message}", pytrace=False)


def _sanitizer_shapes(spec, dt, case) -> list:
    if case is not None:
        return [(case.M, case.N)]
    from verifier.battery import PROBE_N

    return [(4, n) for n in PROBE_N if spec.check_supported(4, n, dt) is None]


def rerun_target(nodeid: str, tool: str) -> str:
    """'...::test_softmax[k-f32-case-memcheck]' -> '...::test_softmax[k-f32-case]' (the test it re-runs)."""
    suffix = f"-{tool}]"
    if not nodeid.endswith(suffix):
        raise ValueError(f"{nodeid} is not a {tool} re-run item")
    return nodeid[: -len(suffix)] + "]"


def sanitizer_command(config, info, tool: str, nodeid: str, spec, dt, case, xml, log, junit) -> list:
    """compute-sanitizer (options from verifier.sanitizer.driver, filtered to the kernel's entries) around
    a child ``python -m pytest NODEID -p no:xdist``."""
    from verifier.sanitizer import driver

    filters = driver.kernel_filters(spec, dt, _sanitizer_shapes(spec, dt, case))
    return driver.build_command(info, tool, str(xml), str(log), filters, child_command(config, nodeid, str(junit)))


def sanitized_rerun(item, tool: str):
    """Re-run the test of the same id (minus ``-TOOL``) in ``compute-sanitizer --tool TOOL python -m pytest
    NODEID -p no:xdist``; the verdict comes from the XML records (verifier.sanitizer), the child's own
    test outcome is reported too."""
    config = item.config
    spec, dt = item.callspec.params["verifier_kernel"], item.callspec.params["verifier_dtypes"]
    case = item.callspec.params.get("verifier_case")
    item.user_properties += [("check", tool), ("kernel", spec.name), ("dtype", dt.tag)] + worker_property()
    if resolved_device(config) != "cuda":
        pytest.skip(NO_GPU_SANITIZE)
    from verifier.errors import ToolMissing
    from verifier.sanitizer import driver

    try:
        info = driver.probe(driver.find_tool())
    except ToolMissing as e:
        pytest.skip(f"compute-sanitizer unavailable: {e.message}")
    base = rerun_target(item.nodeid, tool)
    xml, log = _artifact_path(config, item.nodeid, ".xml"), _artifact_path(config, item.nodeid, ".log")
    junit = _artifact_path(config, item.nodeid, ".child.xml")
    for p in (xml, log, junit):
        p.unlink(missing_ok=True)
    cmd = sanitizer_command(config, info, tool, base, spec, dt, case, xml, log, junit)
    code, out = run_child(cmd, cwd=config.rootpath,
                          extra_env={"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "VERIFIER_TRITON_MODE": "compiled"})
    repro = " ".join(shlex.quote(c) for c in cmd)
    where = f"\nsanitizer log: {log}\nsanitizer xml: {xml}\nrepro: {repro}"
    if code is None:
        pytest.fail(f"{tool} re-run of {base} did not finish within {CHILD_TIMEOUT_S:g} s{where}", pytrace=False)
    if not xml.is_file():
        pytest.fail(f"compute-sanitizer --tool {tool} wrote no XML (exit {code}); last output:\n{_tail(out)}{where}",
                    pytrace=False)
    outcome = junit_outcome(junit)
    findings = sanitizer_findings(spec, dt, case, tool, code, xml, log, repro,
                                  launched_ok=outcome is not None and outcome[0] in ("passed", "skipped"))
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        pytest.fail(f"{len(errors)} {tool} finding(s), worst first:\n{format_findings(errors)}{where}", pytrace=False)
    if outcome is None:
        pytest.fail(f"the test gave no result under {tool} (exit {code}); last output:\n{_tail(out)}{where}",
                    pytrace=False)
    if outcome[0] == "skipped":
        pytest.skip(outcome[1])
    if outcome[0] != "passed":
        pytest.fail(f"{tool} found nothing, but the test itself failed under it:\n{outcome[2] or outcome[1]}{where}",
                    pytrace=False)


def sanitizer_findings(spec, dt, case, tool: str, code, xml, log, repro: str, launched_ok: bool = True) -> list:
    """The findings of a re-run's XML, judged as ``verifier sanitize`` judges them (verifier.sanitizer.verdict):
    the records, an unreadable XML after 'errors found' as an error, sanitizer-suppressions.toml applied.
    ``launched_ok``: the child test passed or skipped (a failed one explains the exit code itself)."""
    from verifier.sanitizer.verdict import judge_xml, suppressed

    _, findings = judge_xml(spec, tool, code, xml, log, launched_ok, kernel=spec.name, dtype=dt.tag,
                            input=case.name if case else "", repro=repro)
    return suppressed(spec, findings)

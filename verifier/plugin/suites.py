"""The generated op suites: six tests per op (values per case, Hypothesis shapes, refusal, determinism, build,
static), each marked ``verifier(op=..., step=...)`` and parametrized over kernels by the plugin. One home for both
places that collect them: this repository's ``suites/test_ops.py`` (every registered kernel), and a user's own
project, where ``pytest --verifier-specs PATH`` has no test file to collect: each spec file there becomes a
collector of its own (``SpecSuites``), its node ids ``PATH/my_spec.py::test_softmax[KERNEL-DTYPE-CASE]``, holding
the suites of the ops its kernels declare, parametrized over its kernels only (``--verifier-bundled`` adds the
bundled kernels' spec files). Where a suite module such as suites/test_ops.py is collected it already runs those
kernels, so none is generated twice.
"""
from __future__ import annotations

import os
import types
from pathlib import Path

import pytest

from verifier.battery.plan import PLAN
from verifier.ops import OPS

SUFFIXES = {s.suffix: s.name for s in PLAN}  # the battery's plan (verifier.battery.plan): a test per step
SPEC_FILE_ATTR = "VERIFIER_SPEC_FILE"  # on a generated module: parametrize with this spec file's kernels only


def suite_tests(op: str) -> dict:
    """``{test_<op><suffix>: function}``: the six marked tests of one op (each one battery step, through
    verifier.plugin.checker)."""
    def values(verifier_check, verifier_kernel, verifier_dtypes, verifier_case, verifier_inputs):
        verifier_check.values(verifier_kernel, verifier_dtypes, verifier_case, verifier_inputs)

    def shapes(verifier_check, verifier_kernel, verifier_dtypes):
        verifier_check.shapes(verifier_kernel, verifier_dtypes)

    def refusal(verifier_check, verifier_kernel, verifier_dtypes):
        verifier_check.refusal(verifier_kernel, verifier_dtypes)

    def determinism(verifier_check, verifier_kernel, verifier_dtypes):
        verifier_check.determinism(verifier_kernel, verifier_dtypes)

    def build(verifier_check, verifier_kernel):
        verifier_check.build(verifier_kernel)

    def static(verifier_check, verifier_kernel):
        verifier_check.static(verifier_kernel)

    bodies = {"values": values, "shapes": shapes, "refusal": refusal, "determinism": determinism, "build": build,
              "static": static}
    out = {}
    for suffix, step in SUFFIXES.items():
        fn = bodies[step]
        name = f"test_{op}{suffix}"
        fn.__name__ = fn.__qualname__ = name
        # step: the plugin does not generate a test that could only skip here (it says how many in one line)
        out[name] = pytest.mark.verifier(op=op, step=step)(fn)
    return out


class SpecSuites(pytest.Module):
    """The suites of one spec file's kernels, generated: no test file is imported (the spec file is loaded by the
    registry, as everywhere)."""

    def _getobj(self):
        from verifier.plugin.session import registered_kernels

        origin = str(self.path)
        mod = types.ModuleType(f"verifier_suites_of_{self.path.stem}")
        mod.__file__ = origin
        setattr(mod, SPEC_FILE_ATTR, origin)
        for op in dict.fromkeys(OPS[k.op].base for k in registered_kernels(self.config) if k.origin == origin):
            vars(mod).update(suite_tests(op))
        return mod


def spec_files(config) -> list:
    """The spec files whose kernels get generated suites: those under --verifier-specs (plus the bundled ones with
    --verifier-bundled), resolved; cached per session."""
    v = config._verifier
    if "suite_files" not in v:
        from verifier.declare import registry
        from verifier.plugin.session import bundled_spec_files

        files = registry.find_spec_files(v["specs"]) if v["specs"] else []
        if v.get("bundled"):
            files += bundled_spec_files()
        v["suite_files"] = list(dict.fromkeys(Path(f).resolve() for f in files))
    return v["suite_files"]


def generates(config) -> bool:
    """Whether this session generates suites: --verifier-specs or --verifier-bundled given, not a child pytest run
    of the plugin, and no argument naming single tests (``FILE::TEST``: those are run as named)."""
    v = config._verifier
    return bool(v["specs"] or v.get("bundled")) and not v["child"] and not any("::" in str(a) for a in config.args)


def module_for(module_path: Path, parent):
    """The collector of a spec file pytest was asked to collect (``pytest my_spec.py::test_softmax[...]``: a repro
    line, a child run), or None for any other file."""
    config = parent.config
    if not (config._verifier["specs"] or config._verifier.get("bundled")):
        return None
    path = Path(module_path).resolve()
    if path not in spec_files(config):
        return None
    return SpecSuites.from_parent(parent, path=path)


def _is_suite(item) -> bool:
    marker = item.get_closest_marker("verifier")
    return marker is not None and marker.kwargs.get("step") is not None


def add_generated(session, items: list) -> None:
    """Append the generated suites of every spec file not collected already. Where a suite module of its own (this
    repository's suites/test_ops.py) was collected, it runs every registered kernel: nothing is generated, and a
    spec file's suites collected beside it are dropped (each test would run twice)."""
    config = session.config
    if not (config._verifier["specs"] or config._verifier.get("bundled")):
        return
    own = [i for i in items if _is_suite(i) and i.getparent(SpecSuites) is None]
    if own:
        items[:] = [i for i in items if i.getparent(SpecSuites) is None]
        return
    if not generates(config):
        return
    have = {i.getparent(SpecSuites).path for i in items if i.getparent(SpecSuites) is not None}
    for path in spec_files(config):
        if path in have:
            continue
        nodeid = os.path.relpath(path, config.rootpath).replace(os.sep, "/")
        items.extend(session.genitems(SpecSuites.from_parent(session, path=path, nodeid=nodeid)))

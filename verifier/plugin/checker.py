"""The body of each suite test: one battery step of one kernel through the battery's own step functions
(verifier.battery), so a suite test and ``verifier check`` judge the same input the same way and the repro line
re-runs exactly it. A test fails with the findings (worst first) and the repro lines; junit gets the check
class as a property; warnings pass unless --verifier-strict, shown as a junit property and a pytest warning.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import replace

import pytest

from verifier.battery import gate
from verifier.battery.build import check_build
from verifier.battery.determinism import check_determinism
from verifier.battery.hypothesis import check_shapes
from verifier.battery.refusal import check_refusal
from verifier.battery.plan import config_variants, each_config, guarded, pinned
from verifier.battery.values import hang_finding, run_case
from verifier.declare.usercode import UserCodeError, spec_error
from verifier.errors import SpecError
from verifier.gpu import pinning as gpu_pinning
from verifier.lint.step import battery_hook as static_hook
from verifier.plugin.session import (STATE, VerifierWarning, format_findings, known_skip, repro_command,
                                     values_not_checked, worker_property)
from verifier.results.kernel import KernelReport
from verifier.results.run import sorted_findings


class Checker:
    """One battery step of one kernel per call, through the battery's own functions, so a suite test and
    ``verifier check`` judge the same input the same way (and the repro line re-runs exactly it).
    Fails with the findings (worst first) and the repro lines; junit gets the check class as property."""

    def __init__(self, opts, record_property, nodeid: str, config):
        self.opts = replace(opts, sanitize=False)  # compute-sanitizer runs are their own items (-memcheck)
        self.record, self.nodeid, self.config = record_property, nodeid, config
        self.strict = bool(getattr(config, "_verifier", {}).get("strict"))
        self.where = {}  # dtype / input of this test, for a timeout finding

    # each method is one test's body
    def values(self, spec, dt, case, inputs):
        """One catalogue case: value (ULP budget), invariants, NaN/inf, unwritten outputs, guard bands."""
        self._start(spec, dt, "value", case.name)
        error = None
        try:
            closed = gate.before_inputs(spec, dt, case.name, case.M, case.N, case.layout, self.opts.device,
                                        self.opts.level)
        except UserCodeError as e:
            error = e
        except SpecError as e:  # a supports() returning a bool
            error = spec_error(spec, e)
        if error is not None:  # failed outside the except clause: no chained traceback in the test's report
            self._spec_error(error)
        closed = closed or gate.after_inputs(spec, dt, case.name, inputs, self.opts.device)
        if closed is not None:  # the battery's gate, the battery's words
            self._skip(closed.reason if closed.kind == gate.INTERPRETER else closed.text)
        report = self._report(spec)
        try:
            self._guarded(report, lambda: self._every_config(
                spec, report, lambda: run_case(spec, dt, case.name, inputs, self.opts, report, layout=case.layout)))
        except gate.NotRun as e:  # ran in the interpreter, which cannot run it faithfully: the battery's words
            self._skip(e.closed.reason)
        self._conclude(report, "value")

    def shapes(self, spec, dt):
        """Hypothesis-drawn shapes with random values (verifier.battery.hypothesis: the examples of the level
        table, the same step as ``verifier check``); a failure is shrunk to the smallest failing shape and
        reported with its repro case."""
        self._start(spec, dt, "value", "hypothesis", step="shapes")
        report = self._report(spec)
        self._guarded(report, lambda: self._every_config(spec, report, lambda: check_shapes(spec, dt, self.opts, report)))
        self._conclude(report, "value")

    def build(self, spec):
        """CUDA: nvcc for the device's arch (sm_80 and sm_90 without a GPU), every launched entry present,
        ptxas resources within the spec's expectations. Triton on a GPU: the compiled kernels' resources."""
        self.check = "build,resources"
        for k, val in worker_property():
            self.record(k, val)
        self.record("kernel", spec.name)
        why = known_skip(spec, "build", self.opts.device, self.opts.level)
        if why:
            self._skip(why)
        report = self._report(spec)
        self._guarded(report, lambda: check_build(spec, self.opts, spec.dtypes, report))
        for note in report.notes:
            self.record("note", note)
        if spec.builds_source:  # a Triton kernel's build cells say only 'not a CUDA source'
            self._skip_if_skipped(report, "build")
        self._conclude(report, "build,resources")

    def static(self, spec):
        """CUDA: the static race/barrier checks of ``verifier lint`` on the PTX of the spec's source, for the
        build check's arches (no GPU needed, so CI runs them)."""
        self.check = "static"
        for k, val in worker_property():
            self.record(k, val)
        self.record("kernel", spec.name)
        why = known_skip(spec, "static", self.opts.device, self.opts.level)
        if why:
            self._skip(why)
        report = self._report(spec)
        self._guarded(report, lambda: static_hook(spec, self.opts, report, spec.dtypes))
        for f in report.findings:
            if f.severity == "warning":
                self.record("warning", f.message.splitlines()[0])
        self._skip_if_skipped(report, "static")
        self._conclude(report, "static")

    def refusal(self, spec, dt):
        """Shapes outside supports() are refused with verifier.errors.Unsupported, before any launch."""
        self._start(spec, dt, "refusal", "refusal")
        report = self._report(spec)
        self._guarded(report, lambda: self._first_config(spec, lambda: check_refusal(spec, dt, self.opts, report)))
        self._conclude(report, "refusal")

    def determinism(self, spec, dt):
        """Repeated runs on one input: bitwise equal if declared deterministic, else each within tolerance."""
        self._start(spec, dt, "determinism", "determinism")
        report = self._report(spec)
        self._guarded(report, lambda: self._first_config(spec, lambda: check_determinism(spec, dt, self.opts, report)))
        self._skip_if_skipped(report, "determinism")
        self._conclude(report, "determinism")

    # helpers
    def _start(self, spec, dt, check, case, step: str = "values"):
        self.check = check
        self.where = {"dtype": dt.tag} if case == "hypothesis" else {"dtype": dt.tag, "input": case}
        for k, val in (("kernel", spec.name), ("dtype", dt.tag), ("case", case)):
            self.record(k, val)
        for k, val in worker_property():
            self.record(k, val)
        if self.opts.device == "cuda":  # which GPU this worker was pinned to
            self.record("cuda_visible_devices", os.environ.get(gpu_pinning.VISIBLE, "(all)"))
        why = known_skip(spec, step, self.opts.device, self.opts.level)  # the words of a test not generated
        if why and step == "values" and getattr(self.config, "_verifier", {}).get("require_values"):
            self.record("check", self.check)
            pytest.fail(values_not_checked(why), pytrace=False)
        if why:
            self._skip(why)

    def _report(self, spec):
        return KernelReport(spec=spec, device=self.opts.device)

    @staticmethod
    def _every_config(spec, report, step):
        """The step under every config an autotuned Triton kernel may pick, as the battery runs it (plan.py)."""
        each_config(spec, report, step)

    @staticmethod
    def _first_config(spec, step):
        with pinned(spec, config_variants(spec)[0][0]):
            step()

    def _guarded(self, report, step):
        """Run a step; a CUDA fault is recorded (by the battery) and poisons this process for later tests. A kernel
        call past the kernel timeout is stopped (verifier.launch.watchdog): this test's timeout finding."""
        def poisons(e):
            if e.cuda:
                STATE.poisoned = str(e)

        # the battery's own ladder (verifier.battery.plan.guarded), as `verifier check` runs it
        error = guarded(report.spec, self.opts, report, step, on_fault=poisons,
                        on_hang=lambda e: report.add(hang_finding(report.spec, self.opts, e, **self.where)))
        if error is not None:  # failed outside the except clause: the error's few lines, no chained traceback
            self._spec_error(error)

    def _spec_error(self, e):
        """The spec's own code raised (verifier.declare.usercode): this kernel's error, not the plugin's."""
        self.record("check", "spec-error")
        pytest.fail(f"error in the spec's own code: {e}", pytrace=False)

    def _skip_if_skipped(self, report, check):
        cells = [v for (tag, c), v in report.cells.items() if c == check]
        if cells and all(v.skipped for v in cells) and not report.findings:
            self._skip(cells[0].reason)

    def _skip(self, reason: str):
        self.record("check", self.check)
        pytest.skip(reason)

    def _fails(self, finding) -> bool:
        """Whether a finding fails the test: errors, and warnings under --verifier-strict."""
        return finding.severity == "error" or (self.strict and finding.severity == "warning")

    def _conclude(self, report, check):
        """Record the check class (on failure: the failing ones, worst first) and fail with the findings.
        Warnings (without --verifier-strict) pass, but are shown: a junit property and a pytest warning."""
        if report.error:  # the step recorded the kernel's error (lint: a source that does not exist)
            self._spec_error(report.error)
        errors = [f for f in report.findings if self._fails(f)]
        if not errors:
            self.record("check", check)
            warned = [f for f in report.findings if f.severity == "warning"]
            if warned:
                text = format_findings(warned)
                self.record("warning", text)
                warnings.warn(VerifierWarning(f"{len(warned)} warning(s) (--verifier-strict fails on them):\n{text}"))
            return
        classes = ",".join(dict.fromkeys(f.check for f in sorted_findings(errors)))
        self.record("check", classes)
        self.record("repro", sorted_findings(errors)[0].repro)
        pytest.fail(f"{len(errors)} finding(s) [{classes}], worst first:\n{format_findings(errors)}\n"
                    f"pytest repro: {repro_command(self.config, self.nodeid)}", pytrace=False)

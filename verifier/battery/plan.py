"""The battery's plan: its steps in order and what happens when one raises, one home for ``verifier check``
(verifier.battery.check_kernel) and the pytest plugin's suites (verifier.plugin), so the two judge alike.

``PLAN``: the steps, in the order the battery runs them for a kernel: build (nvcc and ptxas, or the compiled
kernel's facts), static (verifier.lint on the PTX), then per dtype refusal, values (every catalogue case), shapes
(Hypothesis-drawn) and determinism. A generated suite has one test per step (``test_<op><suffix>``).

``config_variants`` / ``pinned``: an autotuned Triton kernel's values are checked under every config it may pick.

``guarded``: the exception-to-verdict ladder of one step. The spec's own code raising, or a spec found malformed
while it runs, is that kernel's error (returned: the CLI blames the report, a suite test fails with it); a kernel's
fault is recorded as its crash finding; a call past the kernel timeout is its timeout finding; a UsageError (a bad
option, a process-wide setting) propagates (exit 2); another VerifierError is the report's error.
"""
from __future__ import annotations

import contextlib
import importlib.util
from dataclasses import dataclass, replace
from typing import Callable, Optional

from verifier.battery.values import record_fault
from verifier.declare import usercode
from verifier.declare.usercode import UserCodeError
from verifier.errors import SpecError, UsageError, VerifierError
from verifier.launch import watchdog
from verifier.launch.harness import KernelFault
from verifier.results.notes import Note, case_not_run
from verifier.results.options import PSEUDO_CASES


@dataclass(frozen=True)
class Step:
    """One step of the plan: its name (``--case`` and suite marks use it), the suffix of its suite test and the
    check classes it judges; ``per_dtype``: run once per dtype variant (else once per kernel)."""

    name: str
    suffix: str
    checks: tuple
    per_dtype: bool = True


VALUE_CHECKS = ("value", "rounding", "invariant", "nan-inf", "unwritten", "out-of-range-write", "input-clobbered")
PLAN: tuple = (
    Step("build", "_build", ("build", "resources"), per_dtype=False),
    Step("static", "_static", ("static",), per_dtype=False),
    Step("refusal", "_refusal", ("refusal",)),
    Step("values", "", VALUE_CHECKS),
    Step("shapes", "_shapes", VALUE_CHECKS),
    Step("determinism", "_determinism", ("determinism",)),
)
STEP_NAMES = tuple(s.name for s in PLAN)


def wants(opts, step: str) -> bool:
    """Whether this run includes the per-dtype ``step`` of PLAN ('refusal', 'values', 'shapes', 'determinism'):
    all of them (shapes where the level draws any), unless ``--case`` narrows the run to one input (values) or one
    pseudo-case. The battery runs by it; a child that died says by it what it never ran (verifier.isolation)."""
    if step == "shapes":
        return opts.case is None and bool(opts.run_level.hypothesis)
    if opts.case is None:
        return True
    if opts.case in PSEUDO_CASES:
        return step == opts.case
    return step == "values"


def config_variants(spec) -> list:
    """[(config index, label)] the values step runs under: every config an autotuned Triton kernel may pick
    (verifier.launch.triton_configs: the autotuner picks the fastest here, a wrong config is a bug elsewhere); one
    unlabelled run for every other kernel. Refusal and determinism run under the first."""
    if not spec.uses_triton and not (spec.may_launch_triton and importlib.util.find_spec("triton") is not None):
        return [(None, "")]  # (a callable's own Triton kernels: pinned as a TritonKernel's, by its name)
    from verifier.launch.triton import autotune_variants

    return autotune_variants(spec)


def pinned(spec, index):
    """The kernel pinned to config ``index`` of config_variants while the block runs (None: as it is)."""
    if index is None:
        return contextlib.nullcontext()
    from verifier.launch.triton import autotune_pinned

    return autotune_pinned(spec, index)


CONFIG_STEP = "values under "  # the progress step starting a config's values: a child that dies names its config


def each_config(spec, report, step, say=None) -> None:
    """``step()`` under every config of config_variants, its findings labelled with the config. The list is read
    again after each run: an autotuner the launcher reached in another module (a library's wrapper) is known only
    once it ran, pinned, and its other configs run then; a label names the configs that ran."""
    variants, i, first, ran = config_variants(spec), 0, None, {}
    while i < len(variants):
        index, config = variants[i]
        key = _values_key(spec, index)
        if key is not None and key in ran:  # the interpreter computes it as a config already run: the same values
            _same_values(report, config, ran[key])
            i += 1
            continue
        if key is not None:
            ran[key] = config
        if config and say is not None:
            say(f"{CONFIG_STEP}{config}")
        before, calls = len(report.findings), _calls(spec, index)
        with pinned(spec, index):
            step()
        variants = config_variants(spec)  # the labels say what ran (a config early_config_prune dropped is not)
        config = variants[i][1] if i < len(variants) else config
        labelled(report, before, config)
        if key is not None:  # an autotuner met in this run (a library's) is part of what this config computes with
            ran.setdefault(_values_key(spec, index), config)
        made = {k: (name, n - calls.get(k, (name, 0))[1]) for k, (name, n) in _calls(spec, index).items()}
        if first is None:
            first = made
        else:
            _went_around(report, config, first, made)
        i += 1


def _values_key(spec, index):
    """What config ``index`` computes with in the interpreter (None: compiled, or not known)."""
    if index is None or not getattr(spec, "uses_triton", False):
        return None
    from verifier.launch.triton import interpreted_values_key

    return interpreted_values_key(spec, index)


def _same_values(report, config: str, same: str) -> None:
    note = Note(f"{config}: not run again in the Triton interpreter: it differs from {same.split(' (')[0]} only in "
                "num_warps / num_stages / num_ctas, which the interpreter does not model (the same values); a GPU "
                "run checks it")
    if note not in report.notes:
        report.notes.append(note)


def _calls(spec, index) -> dict:
    """The pinned calls of the kernel's autotuners so far ({} for a kernel not pinned)."""
    if index is None:
        return {}
    from verifier.launch.triton import autotune_calls

    return autotune_calls(spec)


def _went_around(report, config: str, first: dict, made: dict) -> None:
    """A note where an autotuner was asked less under this config than under the first over the same inputs: the
    launches it missed ran a kernel compiled under another config (a library cache above the autotuner), so this
    config's values were not all checked; its findings' label says the config asked for, not the one that ran."""
    fewer = [f"{name} ({made.get(k, (name, 0))[1]} of {n} calls)" for k, (name, n) in first.items()
             if n > made.get(k, (name, 0))[1]]
    if not fewer:
        return
    note = case_not_run(
        f"{config}: not all checked: {', '.join(fewer)} reached the autotuner under it: the other launches went "
        "around the autotuner (a cache above it, as FlagGems' libentry keeps one compiled kernel per argument "
        "signature, relaunched a kernel compiled under an earlier config)")
    if note not in report.notes:
        report.notes.append(note)


_UNDER = "\n    under "


def labelled(report, before: int, config: str) -> None:
    """The findings added since ``before`` say which config they used; one the same as an earlier config's but for
    that label (a refusal every config meets) joins it, its label listing the configs."""
    if not config:
        return
    kept, seen = report.findings[:before], {}
    for pos, f in enumerate(kept):
        base, _, configs = f.message.partition(_UNDER)
        if configs:
            seen[(f.check, f.dtype, f.input, f.shape, base)] = pos
    for f in report.findings[before:]:
        pos = seen.get((f.check, f.dtype, f.input, f.shape, f.message))
        if pos is None:
            seen[(f.check, f.dtype, f.input, f.shape, f.message)] = len(kept)
            kept.append(replace(f, message=f"{f.message}{_UNDER}{config}"))
        elif not kept[pos].message.endswith(config):
            kept[pos] = replace(kept[pos], message=f"{kept[pos].message}; {config}",
                                score=max(kept[pos].score, f.score))
    report.findings[:] = kept


def guarded(spec, opts, report, step: Callable[[], None], *, on_hang: Callable, on_fault: Optional[Callable] = None,
            deadline: bool = True) -> Optional[UserCodeError]:
    """Run ``step()`` under the kernel timeout (``deadline``) with the ladder above; returns the kernel's error (the
    spec's own code, or a malformed spec) for the caller to report, else None. ``on_hang(e)`` records a timeout;
    ``on_fault(e)`` is told of a kernel fault after it is recorded (the plugin marks a broken CUDA context)."""
    try:
        if deadline:
            with watchdog.deadline(opts.kernel_timeout):  # a kernel call past it raises KernelHang
                step()
        else:
            step()
    except UserCodeError as e:  # the spec's own code raised
        return e
    except SpecError as e:  # the spec is malformed (found while running it)
        return usercode.spec_error(spec, e)
    except UsageError:
        raise
    except KernelFault as e:  # recorded once; nothing more of this kernel can run meaningfully
        record_fault(spec, opts, report, e)
        if on_fault is not None:
            on_fault(e)
    except watchdog.KernelHang as e:  # a hang costs this kernel a timeout finding, nothing else
        on_hang(e)
    except VerifierError as e:
        report.error = f"{type(e).__name__}: {e}"
    return None

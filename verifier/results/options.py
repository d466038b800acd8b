"""What one run is asked to do (Options), validated where it is built, and the command line that re-runs a
piece of it (repro_line).

Every consumer (the battery, the isolation children, the sanitizer, the pytest plugin, the CLI) reads an Options;
a bad value never gets past its construction. ``Options.from_settings`` builds one from raw strings (the
command line, VERIFIER_<NAME> variables, pytest options) and names the setting the user actually wrote in its
error (``--level``, ``VERIFIER_BUDGET``, ``--verifier-seed``).
"""
from __future__ import annotations

import dataclasses
import os
import shlex
import zlib
from dataclasses import dataclass
from typing import Optional

from verifier.constants import DEFAULT_LEVEL, KERNEL_TIMEOUT_ENV, SANITIZER_TOOLS
from verifier.errors import UsageError
from verifier.results.levels import TABLE as LEVELS
from verifier.results.levels import Level

PSEUDO_CASES = ("refusal", "determinism")  # --case values that run one check instead of one input
RESOLVED_DEVICES = ("cpu", "cuda")
TRITON_MODES = ("compiled", "interpreter")
DEFAULT_TIMEOUT_S = 600.0  # seconds a kernel's battery may take in its child process
SANITIZER_ALLOWANCE_S = 300.0  # per sanitizer tool, added to a sanitized kernel's timeout


def _positive_seconds(raw, source: str, fix: str) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = -1.0
    if not value > 0 or value != value:
        sep = "" if source.endswith("=") else " "
        raise UsageError(f"{source}{sep}{raw!r} is not a positive number of seconds", fix=fix)
    return value


def check_setting(name: str, raw, source: Optional[str] = None):
    """``raw`` as field ``name`` of Options takes it (a string from a command line or variable is parsed), or a
    UsageError naming ``source`` (default ``Options.<name>``), what is wrong and the fix."""
    source = source or f"Options.{name}"
    if name == "level":
        if raw not in LEVELS:
            raise UsageError(f"{source} {raw!r} is not a run level", fix=f"use one of {', '.join(LEVELS)}")
        return raw
    if name == "seed":
        if isinstance(raw, bool):
            raw = "bool"
        try:
            return int(raw) if isinstance(raw, int) else int(str(raw), 10)
        except ValueError:
            raise UsageError(f"{source} {raw!r} is not an integer", fix="pass a whole number, e.g. --seed 0") from None
    if name == "device":
        if raw not in RESOLVED_DEVICES:
            raise UsageError(f"{source} {raw!r} is not a device this run can use",
                             fix="resolve 'auto' first (verifier.gpu.probe.resolve_device): cpu or cuda")
        return raw
    if name in ("case", "dtype"):
        if raw is not None and not (isinstance(raw, str) and raw):
            raise UsageError(f"{source} {raw!r} is not a name", fix=f"take --{name} from a finding's repro line")
        return raw
    if name == "sanitize":
        if not isinstance(raw, bool):
            raise UsageError(f"{source} {raw!r} is not True or False", fix="pass a bool")
        return raw
    if name == "sanitize_tools":
        if raw is None:
            return None
        tools = tuple([raw] if isinstance(raw, str) else raw)
        bad = [t for t in tools if t not in SANITIZER_TOOLS]
        if bad or not tools:
            raise UsageError(f"{source}: {bad or 'no tool'} is not a compute-sanitizer tool",
                             fix=f"use some of {', '.join(SANITIZER_TOOLS)}")
        return tools
    if name == "triton_mode":
        if raw is not None and raw not in TRITON_MODES:
            raise UsageError(f"{source} {raw!r} is not a Triton mode", fix=f"use one of {', '.join(TRITON_MODES)}")
        return raw
    if name == "timeout":
        if raw is None:
            return None
        return _positive_seconds(raw, source, "e.g. --kernel-timeout 600")
    if name == "jobs":  # kernels checked at once (verifier.isolation.check_all); None: 'auto'
        if raw is None or raw == "auto":
            return None
        if isinstance(raw, bool) or not (isinstance(raw, int) or (isinstance(raw, str) and raw.strip().isdigit())) \
                or int(raw) < 1:
            raise UsageError(f"{source} {raw!r} is not a positive whole number of kernels at once",
                             fix="pass e.g. -j 8, -j 1 for one kernel after another, or -j auto (one per CPU, "
                                 "capped by the GPUs' free memory)")
        return int(raw)
    raise UsageError(f"Options has no setting {name!r}",
                     fix=f"use one of {', '.join([f.name for f in dataclasses.fields(Options)] + ['jobs'])}")


def environment_timeout(default: float = DEFAULT_TIMEOUT_S) -> float:
    """$VERIFIER_KERNEL_TIMEOUT in seconds (``default`` when unset); a bad value is a UsageError naming it."""
    raw = os.environ.get(KERNEL_TIMEOUT_ENV)
    if raw is None:
        return default
    return _positive_seconds(raw, f"{KERNEL_TIMEOUT_ENV}=",
                             f"set {KERNEL_TIMEOUT_ENV}=600 (seconds per kernel in its child process) or unset it")


@dataclass(frozen=True, init=False)
class Options:
    level: str = DEFAULT_LEVEL  # the run's effort: quick | ci | thorough (verifier.results.levels)
    seed: int = 0
    device: str = "cpu"  # resolved: 'cpu' or 'cuda'
    case: Optional[str] = None  # only this catalogue case (repro)
    dtype: Optional[str] = None  # only this dtype tag (repro)
    sanitize: bool = False
    # compute-sanitizer tools of a sanitized run (None: all four); the detection matrix runs only a defect's declared one
    sanitize_tools: Optional[tuple] = None
    triton_mode: Optional[str] = None
    timeout: Optional[float] = None  # seconds per kernel in a child process (None: $VERIFIER_KERNEL_TIMEOUT or 600)

    def __init__(self, level: Optional[str] = None, seed: int = 0, device: str = "cpu", case: Optional[str] = None,
                 dtype: Optional[str] = None, sanitize: bool = False, sanitize_tools=None,
                 triton_mode: Optional[str] = None, timeout: Optional[float] = None, *, budget: Optional[str] = None):
        if budget is not None and level is not None and budget != level:
            raise UsageError(f"Options: level={level!r} and budget={budget!r} disagree",
                             fix="pass level= only (budget= is its older name)")
        values = dict(level=level or budget or DEFAULT_LEVEL, seed=seed, device=device, case=case, dtype=dtype,
                      sanitize=sanitize, sanitize_tools=sanitize_tools, triton_mode=triton_mode, timeout=timeout)
        for name, value in values.items():
            object.__setattr__(self, name, check_setting(name, value))

    @classmethod
    def from_settings(cls, values: dict, sources: Optional[dict] = None) -> "Options":
        """Options from raw settings (strings allowed); an error names ``sources[name]`` (e.g. 'VERIFIER_BUDGET'),
        else ``--name``."""
        sources = sources or {}
        checked = {k: check_setting(k, v, sources.get(k, "--" + k.replace("_", "-"))) for k, v in values.items()}
        return cls(**checked)

    @property
    def budget(self) -> str:
        """The older name of ``level``."""
        return self.level

    @property
    def run_level(self) -> Level:
        return LEVELS[self.level]

    @property
    def kernel_timeout(self) -> float:
        """Seconds a kernel's battery may take in its child: ``timeout``, else $VERIFIER_KERNEL_TIMEOUT, else 600;
        a sanitized run adds each tool's own allowance (the tools run inside the same child)."""
        value = self.timeout if self.timeout is not None else environment_timeout()
        if self.sanitize:
            value += len(self.sanitize_tools or SANITIZER_TOOLS) * SANITIZER_ALLOWANCE_S
        return value

    def to_dict(self) -> dict:
        """The fields, for a child process's request (``Options(**d)`` builds it back)."""
        return dataclasses.asdict(self)


def derived_seed(seed: int, *parts) -> int:
    return zlib.crc32(":".join(map(str, (seed,) + parts)).encode()) & 0x7FFFFFFF


def repro_line(spec, opts: Options, tag: str = "", case: str = "") -> str:
    """The ``verifier check`` command line that re-runs this kernel (narrowed to dtype ``tag`` and
    case ``case`` when given) with the same level (a case's shape depends on it), seed and device."""
    parts = ["verifier", "check", spec.origin or "<spec.py>", "--kernel", spec.name]
    if tag:
        parts += ["--dtype", tag]
    if case:
        parts += ["--case", case]
    parts += ["--level", opts.level, "--seed", str(opts.seed), "--device", opts.device]
    return " ".join(shlex.quote(p) for p in parts)

"""Autotuned Triton kernels checked in every config they may pick (issue #36): the autotuner picks the config that
is fastest on this GPU for this shape, so a config that is wrong is a bug on another GPU or shape, never seen here.

``autotuners(module)``: the ``@triton.autotune`` objects of a kernel module (behind ``@triton.heuristics`` too).
``pinned(module, i)``: while it holds, every autotuner that runs (the module's, and one the launcher reaches in
another module: a library's wrapper calling its own autotuned kernel) runs only its config ``i`` (of a shorter list,
its last) without benchmarking: ``Autotuner.run`` is wrapped once per process and, under a pin, hands the call one
config. The configs the autotuner's ``early_config_prune`` drops for a call are not run (it declares them invalid
there: a single-block kernel pruning BLOCK < N); its ``perf_model`` ranking is a speed estimate for this GPU, not
validity, so every config it ranks stays. Autotuners met while pinned are remembered per pin scope:
``config_count`` is the longest list among the module's and those, ``label`` says a config in words for findings.
A library autotuner that subclasses Autotuner with a ``run`` of its own (FlagGems' LibTuner: its own cache and
benchmark policy, never calling Autotuner.run) is pinned the same way: that ``run`` is wrapped too, for every such
subclass defined when a pin starts and for any instantiated later (Autotuner.__init__ wraps its class)."""
from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field

_PIN: list = []  # the pin in force (innermost last): (scope, config index)
_MET: dict = {}  # scope -> {id(autotuner): Met}: autotuners that ran under a pin of that scope
_WRAPPED: list = []  # the original Autotuner.run, once wrapped
_UNCOUNTED: list = []  # open uncounted() blocks: the verifier's own launches, not the kernel's calls


@dataclass
class Met:
    """An autotuner that ran under a pin: its name, the longest choice list of a call, the configs run per index."""

    name: str
    tuner: object
    most: int = 0
    ran: dict = field(default_factory=dict)  # config index -> [config words], in the order first run
    calls: int = 0  # its pinned calls so far (a cache above it that relaunches a kernel makes fewer: calls_met)


def autotuners(module, launcher: str = "") -> list:
    """[(name, Autotuner)] of ``module``'s globals, each once, in name order: those the ``launcher`` reaches in the
    module's source (verifier.launch.triton_reach: through its helpers too); where that cannot be told, those it
    names when it names any, else all of them. Those that ran under a pin of this scope follow (another module's: a
    library wrapper's autotuned kernel); ``module`` None (a callable's scope): those alone, triton not imported."""
    if module is None:
        return [(m.name, m.tuner) for m in _MET.get(_scope(module, launcher), {}).values()]
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:  # pragma: no cover - Triton without an autotuner
        return []
    seen, out = set(), []
    for name in sorted(vars(module)):
        obj, depth = getattr(module, name), 0
        while obj is not None and depth < 8:  # heuristics(autotune(jit)): follow .fn down to the autotuner
            if isinstance(obj, Autotuner):
                if id(obj) not in seen:
                    seen.add(id(obj))
                    out.append((name, obj))
                break
            obj, depth = getattr(obj, "fn", None), depth + 1
    from verifier.launch.triton_reach import reach

    reached = reach(getattr(module, "__file__", None) or "", launcher)
    if reached is not None:  # what the launcher reaches, through its helpers too (none: it launches no autotuner)
        out = [(n, a) for n, a in out if n in reached]
    else:
        code = getattr(getattr(module, launcher, None), "__code__", None)
        out = [(n, a) for n, a in out if code is not None and n in code.co_names] or out
    have = {id(a) for _, a in out}
    met = [(m.name, m.tuner) for m in _MET.get(_scope(module, launcher), {}).values() if id(m.tuner) not in have]
    return out + met


def _scope(module, launcher: str) -> tuple:
    return getattr(module, "__file__", None) or getattr(module, "__name__", ""), launcher


def _words(cfg) -> str:
    return ", ".join([f"{k}={v}" for k, v in sorted(cfg.kwargs.items())]
                     + [f"{k}={getattr(cfg, k)}" for k in ("num_warps", "num_stages") if getattr(cfg, k, None)])


def _tuner_name(tuner) -> str:
    fn = getattr(tuner, "base_fn", None) or getattr(tuner, "fn", None)
    return getattr(fn, "__name__", None) or type(tuner).__name__


def _choices(tuner, args, kwargs) -> list:
    """The configs this call may pick from: all, less those the autotuner's early_config_prune declares invalid for
    these arguments (as Autotuner.prune_configs applies it; its perf_model ranking is left out, see the docstring)."""
    configs = list(tuner.configs)
    prune = getattr(tuner, "early_config_prune", None)
    if len(configs) < 2 or prune is None:
        return configs
    nargs = dict(zip(tuner.arg_names, args))
    return list(prune(configs, nargs, **kwargs)) or configs


def _pinning(original):
    """``original`` (an autotuner class's run), under a pin, restricted to the pinned config of this call's choices."""
    def run(self, *args, **kwargs):
        if not _PIN:
            return original(self, *args, **kwargs)
        scope, index = _PIN[-1]
        choices = _choices(self, args, kwargs)
        chosen = choices[min(index, len(choices) - 1)]
        met = _MET.setdefault(scope, {}).setdefault(id(self), Met(_tuner_name(self), self))
        met.most = max(met.most, len(choices))
        met.calls += 0 if _UNCOUNTED else 1
        words = met.ran.setdefault(index, [])
        if _words(chosen) not in words:
            words.append(_words(chosen))
        configs = self.configs
        self.configs = [chosen]  # a one-config autotuner launches it without benchmarking
        try:
            return original(self, *args, **kwargs)
        finally:
            self.configs = configs

    run.verifier_pinning = True
    return run


def _wrap_class(cls) -> None:
    """Wrap ``cls.run`` where the class defines its own (Autotuner's, or a library subclass's), once."""
    own = vars(cls).get("run")
    if own is not None and not getattr(own, "verifier_pinning", False):
        cls.run = _pinning(own)


def _wrap_subclasses(base) -> None:
    """Every subclass of ``base`` (and theirs) defining its own run: those defined so far."""
    stack = list(base.__subclasses__())
    while stack:
        cls = stack.pop()
        _wrap_class(cls)
        stack.extend(cls.__subclasses__())


def wrap_run() -> None:
    """Autotuner.run, under a pin, restricted to the pinned config of this call's choices (once per process, where
    triton is imported: a pin never imports it, the code that imports it calls this after); a subclass's own run
    too, and Autotuner.__init__ wraps the class of each autotuner made later."""
    if "triton" not in sys.modules:
        return
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:  # pragma: no cover - Triton without an autotuner
        return
    if _WRAPPED:
        _wrap_subclasses(Autotuner)  # library tuners defined since (cheap: a walk of the subclass tree)
        return
    _WRAPPED.append(Autotuner.run)
    _wrap_class(Autotuner)
    _wrap_subclasses(Autotuner)
    init = Autotuner.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        for cls in type(self).__mro__:  # a library tuner made after the walk above (its module imported late)
            if cls is not Autotuner and isinstance(cls, type) and issubclass(cls, Autotuner):
                _wrap_class(cls)

    Autotuner.__init__ = __init__


@contextlib.contextmanager
def uncounted():
    """Autotuner calls in the block are not counted in calls_met: launches of the verifier's own that run under one
    config only (the large case's row-ownership check, cached per launch: verifier.launch.large_host), which a later
    config would otherwise seem to have missed."""
    _UNCOUNTED.append(True)
    try:
        yield
    finally:
        _UNCOUNTED.pop()


def calls_met(module, launcher: str = "") -> dict:
    """{id(autotuner): (name, pinned calls so far)} of those met under the module and launcher: a step's calls are
    the difference across it. Fewer under one config than under the first, over the same inputs, means launches
    went around the autotuner (a library's cache above it, FlagGems' libentry: one compiled kernel per argument
    signature, relaunched without asking the autotuner again)."""
    return {k: (m.name, m.calls) for k, m in _MET.get(_scope(module, launcher), {}).items()}


def values_key(module, i: int, launcher: str = ""):
    """What config ``i`` hands the kernels for their values: each autotuner's config ``i`` (of a shorter list, its
    last) as its meta-parameters and pre_hook, without num_warps / num_stages / num_ctas, which only compiled Triton
    reads. None where a call may prune the list (early_config_prune: index ``i`` is another config per call)."""
    key = []
    for name, a in autotuners(module, launcher):
        if getattr(a, "early_config_prune", None) is not None:
            return None
        cfg = a.configs[min(i, len(a.configs) - 1)]
        key.append((name, tuple(sorted((k, repr(v)) for k, v in cfg.kwargs.items())), id(cfg.pre_hook)))
    return tuple(key)


def config_count(module, launcher: str = "") -> int:
    """How many configs the launcher's autotuned kernels pick from (the longest list; 1 with no autotuner)."""
    met = _MET.get(_scope(module, launcher), {})
    return max([len(a.configs) for _, a in autotuners(module, launcher)] + [m.most for m in met.values()] or [1])


def label(module, i: int, launcher: str = "") -> str:
    """'autotune config 2 of 4 (kernel: BLOCK=128, num_warps=4)' for each autotuned kernel the launcher uses: the
    config it ran under index i (those it ran, where early_config_prune made them differ from call to call)."""
    parts = []
    met = _MET.get(_scope(module, launcher), {})
    for name, a in autotuners(module, launcher):
        ran = met[id(a)].ran.get(i) if id(a) in met else None
        words = " | ".join(ran) if ran else _words(a.configs[min(i, len(a.configs) - 1)])
        parts.append(f"{name}: {words}")
    return f"autotune config {i + 1} of {config_count(module, launcher)} ({'; '.join(parts)})"


@contextlib.contextmanager
def pinned(module, i: int, launcher: str = ""):
    """Every autotuner that runs while the block runs (the launcher's, wherever defined) runs its config ``i`` of
    this call's choices; remembered for config_count and label under the module and launcher."""
    wrap_run()
    _PIN.append((_scope(module, launcher), i))
    try:
        yield
    finally:
        _PIN.pop()

"""Autotuned Triton kernels checked in every config they may pick (issue #36): the autotuner picks the config that
is fastest on this GPU for this shape, so a config that is wrong is a bug on another GPU or shape, never seen here.

``autotuners(module)``: the ``@triton.autotune`` objects of a kernel module (behind ``@triton.heuristics`` too).
``pinned(module, i)``: while it holds, every autotuner of the module has only its config ``i`` (of a shorter list,
its last), so it launches that config without benchmarking (Triton runs a one-config autotuner directly);
``config_count`` is the longest list, ``label`` says a config in words for findings."""
from __future__ import annotations

import contextlib


def autotuners(module, launcher: str = "") -> list:
    """[(name, Autotuner)] of ``module``'s globals, each once, in name order: those the ``launcher`` reaches in the
    module's source (verifier.launch.triton_reach: through its helpers too); where that cannot be told, those it
    names when it names any, else all of them."""
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
    from verifier.launch.triton_reach import mentioned, reach

    path = getattr(module, "__file__", None) or ""
    reached = reach(path, launcher)
    if reached is not None:  # what the launcher reaches, through its helpers too (none: it launches no autotuner)
        return [(n, a) for n, a in out if n in reached] + _of_libraries(module, mentioned(path, launcher) - reached,
                                                                         seen)
    code = getattr(getattr(module, launcher, None), "__code__", None)
    named = [(n, a) for n, a in out if code is not None and n in code.co_names]
    return named or out or _of_libraries(module, set(code.co_names) if code is not None else set(), seen)


_NOT_LIBRARIES = ("triton", "torch", "numpy", "verifier", "builtins", "typing", "math", "functools")


def _of_libraries(module, names, seen: set) -> list:
    """The autotuners of the modules the launcher's imported names come from (a library's own function or class:
    attorch's ``SoftmaxAutoGrad.apply`` launches kernels its package autotunes): every one among such a module's
    globals, as that module's own reach is not read. Without them, an autotuner the launcher reaches only through an
    import was never pinned, and in the interpreter its benchmark raised ("0 active drivers")."""
    import sys
    import types

    from triton.runtime.autotuner import Autotuner

    out = []
    for name in sorted(names):
        obj = vars(module).get(name)
        lib = obj if isinstance(obj, types.ModuleType) else sys.modules.get(getattr(obj, "__module__", None) or "")
        if lib is None or lib is module or lib.__name__.split(".")[0] in _NOT_LIBRARIES:
            continue
        for attr in sorted(vars(lib)):
            a, depth = vars(lib)[attr], 0
            while a is not None and depth < 8:
                if isinstance(a, Autotuner):
                    if id(a) not in seen:
                        seen.add(id(a))
                        out.append((attr, a))
                    break
                a, depth = getattr(a, "fn", None), depth + 1
    return out


def config_count(module, launcher: str = "") -> int:
    """How many configs the launcher's autotuned kernels pick from (the longest list; 1 with no autotuner)."""
    return max([len(a.configs) for _, a in autotuners(module, launcher)] or [1])


def label(module, i: int, launcher: str = "") -> str:
    """'autotune config 2 of 4 (kernel: BLOCK=128, num_warps=4)' for each autotuned kernel the launcher uses."""
    parts = []
    for name, a in autotuners(module, launcher):
        cfg = a.configs[min(i, len(a.configs) - 1)]
        words = ", ".join([f"{k}={v}" for k, v in sorted(cfg.kwargs.items())]
                          + [f"{k}={getattr(cfg, k)}" for k in ("num_warps", "num_stages") if getattr(cfg, k, None)])
        parts.append(f"{name}: {words}")
    return f"autotune config {i + 1} of {config_count(module, launcher)} ({'; '.join(parts)})"


@contextlib.contextmanager
def pinned(module, i: int, launcher: str = ""):
    """Every autotuner the launcher uses restricted to its config ``i`` while the block runs; restored after."""
    saved = [(a, a.configs) for _, a in autotuners(module, launcher)]
    try:
        for a, configs in saved:
            a.configs = [configs[min(i, len(configs) - 1)]]
        yield
    finally:
        for a, configs in saved:
            a.configs = configs

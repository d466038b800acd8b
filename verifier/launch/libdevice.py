"""libdevice in the Triton interpreter, which leaves every libdevice function a stub (returning None, or raising):
the functions with an exact or accurate numpy counterpart run in numpy around each interpreted launch
(``libdevice_in_numpy``, entered by verifier.launch.interpreter.watch), wherever a module binds them; the rest,
the fast_* approximations included, stay an interpreter gap (verifier.battery.gate). docs/specs.md, "libdevice in
the interpreter"."""
from __future__ import annotations

import contextlib
import functools
import types


def _round_half_away(x):
    import numpy as np

    t = np.trunc(x)
    return t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0).astype(x.dtype)  # x - t is exact: no double rounding


def _fma(a, b, c):
    """fmaf's one rounding, for float32: the product of two float32 is exact in float64 and the sum rounds there
    first (a second rounding to float32 follows in the caller; it differs from fmaf's only where the float64 sum
    lands exactly on a float32 tie, far rarer than float32's a * b + c, which rounds the product too)."""
    import numpy as np

    return np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)


# libdevice functions the interpreter runs in numpy (float32 / float64 arguments: libdevice has no other). The
# rounding functions are exactly defined, so numpy's are compiled Triton's bits (``round`` is roundf, ties away from
# zero; ``rint`` and ``nearbyint`` ties to even). The others are CUDA's accurate libdevice (tanhf, erff, rsqrtf:
# within 2 ulp), numpy's float32 functions at least as close, and every budget allows the libdevice error. Any
# other libdevice function stays an interpreter gap (Triton's interpreter leaves them stubs returning None), the
# fast_* approximations included (fast_tanhf's tanh.approx: about 2^-11 relative): numpy's exact values would pass
# on the CPU a kernel whose approximation the GPU run fails.
@functools.lru_cache(maxsize=None)
def _np_table() -> dict:
    import math

    import numpy as np

    erf = np.vectorize(math.erf, otypes=[np.float64])
    return {"round": _round_half_away, "rint": np.rint, "nearbyint": np.rint, "trunc": np.trunc,
            "floor": np.floor, "ceil": np.ceil,
            "tanh": np.tanh, "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
            "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda a: 1.0 / np.sqrt(a), "erf": erf, "pow": np.power,
            "abs": np.abs, "fabs": np.abs, "sin": np.sin, "cos": np.cos, "div_rn": np.divide,
            "fma": _fma, "fmax": np.fmax, "fmin": np.fmin, "isnan": np.isnan, "isinf": np.isinf}


def _libdevice_numpy(name: str, stub):
    """The interpreter's implementation of libdevice function ``name`` (a _np_table entry): numpy on the data of
    float32 / float64 tensors, ``stub`` (the interpreter's own gap) for anything else."""
    fn = _np_table()[name]

    def call(*args, _semantic=None, **kwargs):
        import numpy as np
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        ref = next((a for a in args if isinstance(a, tl.tensor)), None)
        if ref is None or ref.handle.data.dtype not in (np.float32, np.float64):
            return stub(*args, **kwargs)  # not a float32 / float64 tensor: the stub's None, the gap it was
        data = [a.handle.data if isinstance(a, tl.tensor) else a for a in args]
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*data))
        if out.dtype == np.bool_:
            return tl.tensor(TensorHandle(out, tl.int1), ref.type.with_element_ty(tl.int1) if ref.type.is_block()
                             else tl.int1)
        return tl.tensor(TensorHandle(out.astype(ref.handle.data.dtype), ref.handle.dtype), ref.type)

    call.__name__ = name
    return call


_LIBDEVICE_MODULES = ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice",
                      "triton.language.extra.hip.libdevice")
_originals: dict = {}  # id -> (name, libdevice function): the _np_table ones, as Triton defines them
_bindings: list = []  # (module, global name, original, libdevice name) of every module binding one of them
_scanned = [0]  # len(sys.modules) when _bindings was last computed


def _libdevice_bindings() -> list:
    """Where the _np_table libdevice functions are bound: their own modules and every module that imported one by
    name or aliased it (``tl_round = tl.extra.cuda.libdevice.round``: lmdeploy; ``triton_tanh = libdevice.tanh``:
    Unsloth). sys.modules is scanned again only when modules were loaded since (a kernel module is, before its first
    launch)."""
    import importlib
    import sys

    if not _originals:
        for mod_name in _LIBDEVICE_MODULES:
            try:
                mod = importlib.import_module(mod_name)
            except ImportError:
                continue
            for name in _np_table():
                orig = getattr(mod, name, None)
                if orig is not None and getattr(orig, "__name__", "") == name:
                    _originals[id(orig)] = (name, orig)
    if len(sys.modules) != _scanned[0]:
        found = []
        for m in list(sys.modules.values()):
            d = getattr(m, "__dict__", None)
            if not isinstance(d, dict):
                continue
            for k, v in list(d.items()):
                name = _libdevice_name(v)
                if name is not None:
                    found.append((m, k, v, name))
        _bindings[:] = found
        _scanned[0] = len(sys.modules)
    return _bindings


def _libdevice_name(v):
    """The _np_table name of libdevice function ``v``, else None: Triton's own, or the same definition from a copy
    of a libdevice module executed afresh outside sys.modules (xformers' ``libdevice_find`` loads it so, then binds
    ``rsqrt = libdevice_find("rsqrt")``): another object, with its module's name and its own."""
    hit = _originals.get(id(v))
    if hit is not None and hit[1] is v:
        return hit[0]
    # type(), not isinstance: the latter reads __class__, which warns on deprecated module attributes (torch's)
    if type(v) is types.FunctionType and v.__module__ in _LIBDEVICE_MODULES and v.__qualname__ in _np_table():
        return v.__qualname__
    return None


@contextlib.contextmanager
def libdevice_in_numpy():
    """Inside the block, the _np_table libdevice functions run in the interpreter, which otherwise leaves every
    libdevice function unimplemented: a kernel rounding with ``libdevice.round(x).to(tl.int8)`` (vLLM's int8
    quantizers) or capping with ``libdevice.tanh`` (Unsloth) is then checked on the CPU, not an interpreter gap.
    Every binding is replaced: the module attributes (``tl.extra.cuda.libdevice.round``, which a kernel reaching
    them through the module reads at each call) and names a module imported or aliased (``tl_round = ...round``)."""
    saved = []
    for mod, name, orig, libdevice_name in _libdevice_bindings():
        saved.append((mod, name, orig))
        setattr(mod, name, _libdevice_numpy(libdevice_name, orig))
    try:
        yield
    finally:
        for mod, name, orig in reversed(saved):
            setattr(mod, name, orig)

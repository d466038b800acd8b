"""Blame the user's code, not the verifier: exceptions raised by a spec's own functions.

A spec's ``supports``, ``launches``, ``defines``, a callable's ``fn`` and a Triton ``launcher`` are the
user's code. When one of them raises, that kernel gets verdict ``error`` with a message naming the spec
file, the function, the exception and the last frame of the traceback that lies in user code; the run goes
on with the other kernels and exits 1 (findings). Exit 3 stays for bugs in kernel-verifier itself.

An exception raised *by the kernel* while it runs (``fn`` / ``launcher``) is judged by the project rule:
- raised for some shapes that supports() accepts and not others: a deliberate-looking **refusal** finding
  (declare it in supports());
- raised on every input the battery gave it, or a TypeError / NameError from calling the user's function:
  the kernel's **error** (it cannot be checked at all);
- a CUDA fault, or an exception from Triton's compiler or runtime: a **crash** (not a Python refusal), except the
  compiler's per-shape resource limit (``OutOfResources``: shared memory past the hardware's), a **refusal** that
  quotes the compiler and says to declare the limit in supports().
"""
from __future__ import annotations

import sysconfig
import traceback
from pathlib import Path
from typing import Optional

from verifier.errors import VerifierError
from verifier.results.cells import skipped
from verifier.results.kernel import USER_ERROR

_VERIFIER_DIR = Path(__file__).resolve().parents[1]  # the verifier package
_LIBRARY_DIRS = tuple(Path(p).resolve() for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"],
                                                  sysconfig.get_paths()["platlib"]})
# Exceptions that say the user's function is broken (a typo, a wrong signature), never a deliberate refusal.
PROGRAMMING_ERRORS = (NameError, TypeError)
REFUSAL_FIX = "declare supports() returning this reason if the refusal is deliberate"


class UserCodeError(VerifierError):
    """An exception in a spec's own code (supports, launches, defines, fn, launcher): that kernel's error."""

    exit_code = 1

    def __init__(self, message: str, *, fix: Optional[str] = None):
        super().__init__(message, fix=fix)


def _is_user_file(filename: str) -> bool:
    try:
        p = Path(filename).resolve()
    except (OSError, ValueError):
        return False
    if filename.startswith("<"):
        return False
    for d in (_VERIFIER_DIR,) + _LIBRARY_DIRS:
        if d == p or d in p.parents:
            return False
    return True


def last_user_frame(e: BaseException) -> Optional[traceback.FrameSummary]:
    """The innermost traceback frame of ``e`` in user code (not kernel-verifier, not the standard library
    or installed packages); None when the whole traceback lies outside it."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if _is_user_file(f.filename)]
    return frames[-1] if frames else None


def describe(e: BaseException) -> str:
    """``Type: message (at file:line in function: source)``: the exception and where the user's code raised it."""
    text = f"{type(e).__name__}: {e}"
    f = last_user_frame(e)
    if f is not None:
        src = f" `{f.line.strip()}`" if f.line else ""
        text += f" (at {f.filename}:{f.lineno} in {f.name}:{src})"
    return text


def error_for(spec, function: str, e: BaseException) -> UserCodeError:
    origin = getattr(spec, "origin", None) or "<spec not loaded from a file>"
    return UserCodeError(
        f"kernel {spec.name}: {function}() of spec file {origin} raised {describe(e)}",
        fix=f"fix {function}() in {origin}; the other kernels were checked")


def spec_error(spec, e) -> UserCodeError:
    """A SpecError found while the battery ran ``spec`` (a launcher that launched nothing, a bool supports(), an
    entry the cubin lacks): that kernel's error, with the spec file named."""
    origin = getattr(spec, "origin", None) or "<spec not loaded from a file>"
    named = e.message.startswith((f"kernel {spec.name}", f"kernel {spec.name!r}"))
    text = e.message if named else f"kernel {spec.name}: {e.message}"
    return UserCodeError(f"{text} (spec file {origin})", fix=e.fix or f"fix the spec in {origin}")


def call(spec, function: str, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, a function of the user's spec; an exception it raises becomes a
    UserCodeError naming the spec file, ``function`` and the user's frame. The verifier's own errors
    (an Unsupported raised on purpose, a SpecError) pass through."""
    try:
        return fn(*args, **kwargs)
    except VerifierError:
        raise
    except Exception as e:
        raise error_for(spec, function, e) from e


def kernel_function(spec) -> str:
    """The name of the user function that runs the kernel (for messages)."""
    return spec.user_function


def _from_triton(e: BaseException) -> bool:
    """Raised by Triton itself (a compile error, out of resources): the kernel failed, it did not refuse."""
    return (type(e).__module__ or "").split(".")[0] == "triton"


def compiler_limit(e: BaseException) -> Optional[BaseException]:
    """The Triton compiler's refusal of one shape (``OutOfResources``: shared memory, registers, threads) in
    ``e``'s chain, or None: a per-shape resource limit, which supports() should declare."""
    seen = []
    while e is not None and all(e is not s for s in seen):
        seen.append(e)
        if type(e).__name__ == "OutOfResources" and _from_triton(e):
            return e
        e = e.__cause__ or e.__context__
    return None


def classify(spec, fault) -> str:
    """How the battery records a kernel that raised ``fault`` (a verifier.launch.harness.KernelFault) on an input
    supports() accepts: 'crash' (a CUDA fault, a failure inside Triton, a launch the GPU refuses) or 'refusal' (a Python exception
    from the user's function, or the Triton compiler's resource limit for that shape). A TypeError or NameError
    is the kernel's error: UserCodeError is raised."""
    original = fault.original
    if not fault.cuda and compiler_limit(original) is not None:
        return "refusal"
    if fault.cuda or _from_triton(original) or getattr(original, "launch_refused", False):
        return "crash"
    if isinstance(original, PROGRAMMING_ERRORS):
        raise error_for(spec, kernel_function(spec), original) from original
    return "refusal"


_REFUSAL_HEAD = "refused a shape its supports() accepts: the kernel raised a Python exception (not a CUDA fault): "


_LIMIT_HEAD = "refused a shape its supports() accepts: the Triton compiler cannot build the kernel for it: "
LIMIT_FIX = ("declare the limit in supports() (return the compiler's reason for the shapes past it), so that they "
             "are refused before launch")


def refusal_message(fault) -> str:
    limit = compiler_limit(fault.original)
    if limit is not None:
        return f"{_LIMIT_HEAD}{type(limit).__name__}: {limit}\n  fix: {LIMIT_FIX}"
    return f"{_REFUSAL_HEAD}{describe(fault.original)}\n  fix: {REFUSAL_FIX}"


def raised_everywhere(spec, counts: dict) -> Optional[UserCodeError]:
    """The kernel's error when every input it was given raised a Python exception (counts: 'ran' inputs
    judged, 'raised' inputs that raised, 'first': the first of those messages); else None."""
    if counts.get("raised", 0) == 0 or counts.get("ran", 0) > 0:
        return None
    origin = getattr(spec, "origin", None) or "<spec>"
    return UserCodeError(
        f"kernel {spec.name}: {kernel_function(spec)}() raised on every one of the {counts['raised']} inputs the "
        f"battery gave it, so nothing could be checked; first: {counts.get('first', '?')}",
        fix=f"fix the kernel in {origin}, or narrow supports() to the shapes it runs")


def blame(report, e: UserCodeError) -> None:
    """Record ``e`` as this kernel's error (verdict 'error', exit 1)."""
    report.error = f"{e}"
    report.error_kind = USER_ERROR


def blame_everywhere(report, e: UserCodeError, checks) -> None:
    """The kernel raised on every input: one error instead of a refusal per input, and the cells of
    ``checks`` skipped, since no input ran through them."""
    blame(report, e)
    report.findings[:] = [f for f in report.findings
                          if not (f.check == "refusal" and f.message.startswith((_REFUSAL_HEAD, _LIMIT_HEAD)))]
    why = skipped("the kernel raised on every input")
    for (tag, check), v in list(report.cells.items()):
        if check in checks and not v.skipped:
            report.cells[(tag, check)] = why


__all__ = ["UserCodeError", "call", "classify", "refusal_message", "raised_everywhere", "blame",
           "last_user_frame", "describe", "REFUSAL_FIX"]

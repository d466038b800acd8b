"""Exception types. Every message says what is wrong and how to fix it."""
from __future__ import annotations

from verifier.constants import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_USAGE


class VerifierError(Exception):
    """Base class. ``fix`` is a one-line suggestion appended to the message."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str, *, fix: str | None = None):
        self.message = message
        self.fix = fix
        super().__init__(message if not fix else f"{message}\n  fix: {fix}")


class UsageError(VerifierError):
    """Bad input from the user: bad option, bad path, bad spec, unknown dtype. Exit code 2."""

    exit_code = EXIT_USAGE


class SpecError(UsageError):
    """A kernel spec is malformed. The message names the field."""


class Unsupported(VerifierError):
    """A kernel refuses a shape or dtype it does not support (raised before any launch)."""

    exit_code = EXIT_FINDINGS


class BuildError(VerifierError):
    """nvcc failed; the message carries the compiler's file:line diagnostics."""

    exit_code = EXIT_FINDINGS


class ToolMissing(VerifierError):
    """A required external tool (nvcc, compute-sanitizer, a GPU) is absent; the message says which."""

    exit_code = EXIT_FINDINGS

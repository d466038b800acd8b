"""What a kernel needs of the GPU: ``min_capability``, checked by ``KernelSpec.check_supported``.

The capability comes from the one GPU probe (verifier.gpu.probe, a stage before this one); with no GPU nothing
is refused: a CPU run only builds the kernel.
"""
from __future__ import annotations

from typing import Optional

from verifier.errors import SpecError
from verifier.gpu import probe


def check_capability(name: str, minimum) -> Optional[tuple]:
    """``minimum`` as a (major, minor) tuple of ints, or None; a SpecError naming the kernel otherwise."""
    if minimum is None:
        return None
    if not (isinstance(minimum, tuple) and len(minimum) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in minimum)):
        raise SpecError(f"kernel {name!r}: field 'min_capability' is {minimum!r}, not a (major, minor) tuple",
                        fix="e.g. min_capability=(9, 0) for a kernel that needs sm_90 (thread-block clusters)")
    return minimum


def capability_reason(minimum: Optional[tuple]) -> Optional[str]:
    """Why the GPU here cannot run a kernel needing ``minimum`` (None: it can, or no GPU is known)."""
    if minimum is None:
        return None
    have = probe.capability()
    if have is None or tuple(have) >= minimum:
        return None
    return (f"needs compute capability {minimum[0]}.{minimum[1]} (min_capability); "
            f"this GPU is {have[0]}.{have[1]}")

"""What a kernel needs of the GPU: ``min_capability``, checked by ``KernelSpec.check_supported``.

The capability comes from the gpu stage (verifier.gpu.probe registers its probe here when it is imported, as
every check run does to resolve its device): declare comes before gpu in the stage order, so it cannot ask gpu
itself. With no probe registered, or no GPU, nothing is refused: a CPU run only builds the kernel.
"""
from __future__ import annotations

from typing import Callable, Optional

from verifier.errors import SpecError

_probe: Optional[Callable[[], Optional[tuple]]] = None


def set_capability_probe(probe: Optional[Callable[[], Optional[tuple]]]) -> None:
    """Install ``probe() -> (major, minor) | None``, the compute capability of the GPU kernels run on."""
    global _probe
    _probe = probe


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
    if minimum is None or _probe is None:
        return None
    have = _probe()
    if have is None or tuple(have) >= minimum:
        return None
    return (f"needs compute capability {minimum[0]}.{minimum[1]} (min_capability); "
            f"this GPU is {have[0]}.{have[1]}")

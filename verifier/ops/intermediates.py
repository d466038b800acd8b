"""``may_round``: in an op's reference, an intermediate a kernel may store rounded to an I/O dtype (no torch import:
spec files import it)."""
from __future__ import annotations

from verifier.errors import SpecError

IO_ROLES = ("input", "output", "weight")


def may_round(t, to: str = "input"):
    """In an op's reference: a kernel may store this intermediate in the variant's ``to`` dtype ('input', 'output' or
    'weight') and compute on from the stored value (fused_add_rmsnorm's residual; x·rstd rounded to the I/O dtype
    before the weight). The float64 value is unchanged; the derived budget adds that rounding, u·|t| plus the dtype's
    underflow (verifier.ops.bounded.Bounded.rounded_to). No torch import here: spec files import this module."""
    if to not in IO_ROLES:
        raise SpecError(f"may_round(..., to={to!r})", fix=f"to is one of {', '.join(IO_ROLES)}")
    rounded = getattr(type(t), "rounded_to", None)
    return rounded(t, to) if rounded is not None else t

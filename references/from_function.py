"""A reference given as a function (``Op(reference=fn)``): ``fn(inputs, params) -> {output: tensor}`` on float64
torch tensors (integer roles as int64), adapted to the module interface of references/*.py.

``float64`` runs the function; its bound is the function's own float64 rounding error, followed through it by the
rules of verifier.ops.derived with u = 2^-53 and the double-precision intrinsic bounds (0 where a function has no
rule: the float64 error is then taken as nil). There is no ``mp``: near a rounding tie of the output dtype the float64
value decides the rounding, which the budget's base ULP covers (docs/tolerances.md). An op that needs certified
ties gives a module with ``float64`` and ``mp``, as the bundled references do.
"""
from __future__ import annotations

import numpy as np

from verifier.errors import SpecError, UsageError


class FunctionReference:
    def __init__(self, op):
        self.op = self.declared_by = op
        self.fn = op.reference

    def _call(self, inputs: dict, params: dict) -> dict:
        import torch

        tin = {k: torch.as_tensor(np.asarray(v).astype(np.int64 if np.asarray(v).dtype.kind in "iub" else np.float64))
               for k, v in inputs.items()}
        try:
            with torch.no_grad():
                out = self.fn(tin, dict(params))
        except UsageError:  # the reference refusing a kernel's param (topk_softmax's gate): its own message and fix
            raise
        except Exception as e:
            raise SpecError(f"op {self.op.name!r}: its reference raised {type(e).__name__}: {e}",
                            fix=f"fix the reference function declared at {self.op.origin}") from None
        return out

    def float64(self, inputs: dict, params: dict):
        out = self._call(inputs, params)
        # an optional output the kernel's variant does not write may be returned too (it is not judged)
        if not isinstance(out, dict) or not set(self.op.outputs) <= set(out) <= {*self.op.outputs,
                                                                                 *self.op.optional_outputs}:
            got = sorted(out) if isinstance(out, dict) else type(out).__name__
            raise SpecError(f"op {self.op.name!r}: its reference returned {got}, expected the outputs "
                            f"{list(self.op.outputs)}", fix="return a dict {output name: float64 tensor}")
        M, N = np.asarray(inputs["x"]).shape
        values = {}
        for k in self.op.outputs:
            v = np.asarray(out[k].detach().cpu().numpy() if hasattr(out[k], "detach") else out[k], dtype=np.float64)
            want = self.op.shape_of(k, M, N, params)
            if v.shape != want:
                raise SpecError(f"op {self.op.name!r}: its reference gave output {k!r} of shape {v.shape}, expected "
                                f"{want}", fix=f"return {k} with shape {want} (declared {self.op.dims_of(k)})")
            values[k] = v
        return values, self._bounds(inputs, params, values)

    def _bounds(self, inputs, params, values) -> dict:
        from verifier.numerics.errmodel import F64_PRECISE
        from verifier.ops.derived import NoErrorRule, Rounding, propagate

        try:
            got = propagate(self.fn, inputs, params, Rounding(2.0**-53, 2.0**-1074, F64_PRECISE))
            return {k: np.broadcast_to(got[k][1], values[k].shape).copy() for k in values}
        except (NoErrorRule, Exception):
            return {k: np.zeros_like(v) for k, v in values.items()}

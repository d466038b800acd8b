"""Which tensors a case with row strides lays out with them: the strided case (each tensor's rows a stride of its
own apart, x's N + 64, verifier.inputs.layouts.row_pad, verifier.launch.harness) and the large case with rows
2^31 + 64 apart (verifier.launch.large)."""
from __future__ import annotations

from verifier.inputs import layouts as _lay


def strided_tensors(spec, op, M: int, N: int, dt, params) -> set:
    """Every 2-D tensor of the op (CUDA: those whose row stride a launch passes, verifier.launch.cuda.strided_tensors):
    a tensor whose stride the kernel is not told stays contiguous, an output of a declared layout keeps it."""
    rows = {t for t in op.inputs if op.role(t).shape == "rows"} | \
        {t for t in op.outputs if len(op.dims_of(t)) == 2}  # not an (M,) row output nor a batch's one value
    rows -= set(getattr(spec, "output_layout", {}))  # an output at a declared layout keeps it (out_layouts)
    if getattr(spec, "builds_source", False):  # its launches name the strides it is told
        from verifier.launch.cuda import strided_tensors as named

        rows &= named(spec, M, N, dt, params)
    return rows


def stride_owners(spec, M: int, N: int, dt, params) -> dict:
    """member -> owner: a tensor a CUDA launch indexes with another's row stride (Stride(owner, shared_with=...)),
    whose strided-case rows lie at the owner's stride (verifier.inputs.layouts.row_pad of the owner)."""
    if not getattr(spec, "builds_source", False):
        return {}
    from verifier.launch.cuda import stride_map

    return {t: o for t, o in stride_map(spec, M, N, dt, params).items() if t != o}


def restrided(spec, op, inputs_np: dict, dt, params, layout) -> dict:
    """A large case's inputs with rows ``layout.stride`` apart where that tensor is strided (strided_tensors),
    contiguous elsewhere; the outputs follow (verifier.launch.large: an output in the strided set gets the stride)."""
    if not layout.stride:
        return inputs_np
    M, N = inputs_np["x"].shape
    keep = strided_tensors(spec, op, M, N, dt, params)
    out = {}
    for name, v in inputs_np.items():
        if isinstance(v, _lay.SparseRows) and name not in keep:
            v = _lay.SparseRows(v.shape, v.dtype, v.rows, v.pattern)
        out[name] = v
    out["__strided__"] = (keep, layout.stride)
    return out

"""Other names a kernel may use for an op's tensors (``Op(other_names={"v_a": "x"})``): every op calls its main input
``x``, but merge_attn_states' first partial output is ``v_a`` where its users' code says so. The launch arguments
of a CUDA kernel (verifier.launch.cuda) and the tensors a Triton launcher or a callable receives answer to both."""
from __future__ import annotations


class TensorsByName(dict):
    """The op's tensors by their names, also found by another name (``d["v_a"]`` is ``d["x"]``); iterating it
    gives the op's own names only, so nothing is counted twice."""

    def __init__(self, tensors: dict, other_names: dict):
        super().__init__(tensors)
        self.other_names = {a: t for a, t in other_names.items() if t in tensors}

    def __getitem__(self, name):
        return super().__getitem__(self.other_names.get(name, name))

    def __contains__(self, name):
        return super().__contains__(self.other_names.get(name, name))

    def get(self, name, default=None):
        return super().get(self.other_names.get(name, name), default)


def named_too(spec, tensors: dict) -> dict:
    """``tensors`` answering to the other names of ``spec``'s op too (the same dict when it has none)."""
    from verifier.ops import get_op

    names = get_op(spec.op).other_names
    return TensorsByName(tensors, names) if names else tensors


def with_other_names(op, named: dict) -> dict:
    """A name -> value map (pointers, strides, extents) with each other name of ``op`` added beside its tensor."""
    extra = {a: named[t] for a, t in op.other_names.items() if t in named and a not in named}
    return {**named, **extra} if extra else named

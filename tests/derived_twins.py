"""The bundled ops written again as a user would declare them: a float64 torch reference and no error model, so
their budgets are derived (verifier.ops.derived). tests/test_derived_budget.py and benchmarks/derived_budget.py
hold them against the hand-derived budgets of the bundled ops."""
import torch

from verifier.ops import OPS, Op, Tensor
from verifier.spec import may_round


def _softmax(i, p):
    return {"y": torch.softmax(i["x"], -1)}


def _log_softmax(i, p):
    return {"y": torch.log_softmax(i["x"], -1)}


def _online_stats(i, p):
    x = i["x"]
    m = x.amax(-1)
    return {"m": m, "l": torch.exp(x - m[:, None]).sum(-1)}


def _rmsnorm(i, p):
    x = i["x"]
    return {"y": x * torch.rsqrt((x * x).mean(-1, keepdim=True) + p["eps"]) * (p["offset"] + i["w"])}


def _layernorm(i, p):
    x = i["x"]
    xm = x - x.mean(-1, keepdim=True)
    return {"y": xm * torch.rsqrt((xm * xm).mean(-1, keepdim=True) + p["eps"]) * i["w"] + i["b"]}


def _fused_add_rmsnorm(i, p):
    h = may_round(i["x"] + i["residual"], "input")  # kernels normalize the residual they stored
    return {"y": h * torch.rsqrt((h * h).mean(-1, keepdim=True) + p["eps"]) * (p["offset"] + i["w"]), "residual": h}


def _reduce_sum(i, p):
    return {"y": i["x"].sum(-1)}


def _cross_entropy(i, p):
    x, labels = i["x"], i["labels"]
    ignored = labels == p["ignore_index"]
    picked = x.gather(1, torch.where(ignored, 0, labels)[:, None])[:, 0]
    return {"loss": torch.where(ignored, 0.0, torch.logsumexp(x, -1) - picked)}


REFERENCES = {"softmax": _softmax, "log_softmax": _log_softmax, "online_softmax_stats": _online_stats,
              "rmsnorm": _rmsnorm, "layernorm": _layernorm, "fused_add_rmsnorm": _fused_add_rmsnorm,
              "reduce_sum": _reduce_sum, "cross_entropy": _cross_entropy}


def twin(name: str) -> Op:
    """The bundled op ``name`` declared with a function reference and no recipe (named 'derived_<name>')."""
    b = OPS[name]
    ins = {t: Tensor("x".join(str(d) for d in b.dims_of(t)), {"data": "input", "labels": "index"}.get(
        b.role(t).kind, b.role(t).kind), dtype=b.role(t).dtype_param, make=b.role(t).make) for t in b.inputs}
    outs = {t: "x".join(str(d) for d in b.dims_of(t)) for t in b.outputs}
    return Op(f"derived_{name}", inputs=ins, outputs=outs, inouts=b.inouts, params=b.params,
              reference=REFERENCES[name], out_dtypes=b.out_dtypes, float64=b.float64)

"""Selection(nan='largest'): a torch.topk replacement must rank NaN above every number, as torch.topk does. By
default a NaN score is free (picked or not: routers' gates, where kernels differ), so a top-k that drops NaN (FlagGems'
topk: tl.max / tl.argmax skip it) passed a spec declaring torch.topk's op; declared 'largest', it is a wrong pick."""
import pytest
import torch

from verifier.battery import check_kernel
from verifier.results.options import Options
from verifier.spec import CallableKernel, Op, Selection, SpecError, Tensor, dtypes


def _op(nan):
    return Op(f"my_row_topk_{nan}", inputs={"x": "MxN"},
              outputs={"values": "Mxk", "indices": Tensor("Mxk", dtype="int64")}, params={"k": 4},
              reference=lambda i, p: dict(zip(("values", "indices"), i["x"].topk(p["k"], dim=-1))),
              selection=Selection("indices", scores=lambda i, p: i["x"],
                                  at=lambda i, p: {"values": i["x"].gather(-1, i["indices"])}, nan=nan))


def _topk(drop_nan):
    def fn(inputs, outputs, params, dt):
        x = inputs["x"]
        v, i = torch.where(x.isnan(), float("-inf"), x).topk(params["k"], dim=-1) if drop_nan else x.topk(params["k"])
        return {"values": x.gather(-1, i), "indices": i}
    return fn


def _verdict(nan, drop_nan):
    spec = CallableKernel(name=f"topk-{nan}-{drop_nan}", op=_op(nan), fn=_topk(drop_nan), dtypes=[dtypes("f32")],
                          device="cpu")
    return check_kernel(spec, Options(level="ci", device="cpu", case="some_nan"))


def test_a_topk_dropping_nan_fails_where_nan_ranks_largest_and_passes_where_it_is_free():
    dropped = _verdict("largest", True)
    assert dropped.verdict == "fail" and any("not in the top k" in f.message for f in dropped.findings), \
        [f.message for f in dropped.findings]
    assert _verdict("largest", False).verdict == "pass"  # torch.topk itself
    assert _verdict("free", True).verdict == "pass"  # the router default: a NaN score is free


def test_nan_largest_is_refused_where_it_cannot_be_judged():
    with pytest.raises(SpecError, match="nan="):
        Op("my_row_topk_bad", inputs={"x": "MxN"}, outputs={"indices": Tensor("Mxk", dtype="int64")},
           params={"k": 4}, reference=lambda i, p: {"indices": i["x"].topk(p["k"])[1]},
           selection=Selection("indices", scores=lambda i, p: i["x"], at=lambda i, p: {}, nan="first"))

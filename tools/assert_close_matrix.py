"""Would plain `torch.testing.assert_close` catch each numeric defect?

For every defect whose declared class is numeric (value, invariant, nan-inf, unwritten,
out-of-range-write) and that can run on the device, launch it on `torch.randn` inputs of a few
fixed shapes, in each of its dtypes, and compare with `torch.testing.assert_close(actual, expected)`
at default tolerances (rtol/atol of the output dtype).

expected: the op computed by torch in float32 from the same (rounded) inputs, then cast to the
output dtype — what a typical test writes (`ref = torch.softmax(x.float(), -1).to(x.dtype)`).
Quantizing ops: the unfused torch pair, compared as numbers with one quantization step allowed (QUANT_STEP), as
fused-quantizer tests do.
Inputs: x, w, b all torch.randn (seeded); outputs allocated with torch.empty and zero-filled, inside
a larger buffer so that a write past the end cannot corrupt the process (assert_close sees only the
output view, as a real test would). A shape the kernel refuses (supports()) is recorded as refused.

    python tools/assert_close_matrix.py --out kernels/defects/results/assert-close-cpu.json [--device cuda]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
SHAPES = ((4, 1024), (8, 4096), (2, 152064))
NUMERIC = ("value", "rounding", "invariant", "nan-inf", "unwritten", "out-of-range-write")
SEED = 0


def _matrix():
    if "kernel_defect_matrix" in sys.modules:
        return sys.modules["kernel_defect_matrix"]
    spec = importlib.util.spec_from_file_location("kernel_defect_matrix", ROOT / "kernels" / "defects" / "matrix.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["kernel_defect_matrix"] = mod
    spec.loader.exec_module(mod)
    return mod


def _capped(x, params):
    cap = float(params.get("softcap", 0.0))
    return cap * torch.tanh(x / cap) if cap > 0 else x


def _rmsnorm(x, i, p, fused=False):
    x = x + i["residual"].float() if fused else x
    w = i["w"].float() + float(p.get("offset", 0.0))
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + p["eps"]) * w


def _cross_entropy(x, i, p, reduced=False):  # with its variants, as a test would write them
    x, labels = _capped(x, p), i["labels"].long()
    y = F.cross_entropy(x, labels, reduction="none", ignore_index=p["ignore_index"],
                        label_smoothing=float(p.get("label_smoothing", 0.0)))
    y = y + float(p.get("z_loss", 0.0)) * torch.logsumexp(x, -1) ** 2 * (labels != p["ignore_index"])
    if not reduced:
        return y
    y = y.sum().reshape(1)
    return y / (labels != p["ignore_index"]).sum() if p["reduction"] == "mean" else y


def _cross_entropy_soft(x, i, p):  # randn targets: any real weights, as F.cross_entropy takes them
    x = _capped(x, p)
    y = F.cross_entropy(x, i["target"].float(), reduction="none", label_smoothing=float(p.get("label_smoothing", 0.0)))
    return y + float(p.get("z_loss", 0.0)) * torch.logsumexp(x, -1) ** 2


def _merge(x, i, p):  # the merge in float32 torch, in the declared base
    la, lb = i["lse_a"].float(), i["lse_b"].float()
    m = torch.maximum(la, lb)
    pw = torch.exp if p["lse_base"] == "e" else torch.exp2
    wa, wb = pw(la - m), pw(lb - m)
    return x * (wa / (wa + wb))[:, None] + i["v_b"].float() * (wb / (wa + wb))[:, None]


def _topk_softmax(x, i, p):  # vLLM's test: softmax in float32, torch.topk, renormalized (the indices: _one)
    y = torch.topk(torch.softmax(x, -1) if p["gate"] == "softmax" else torch.sigmoid(x), int(p["k"]))[0]
    return y / y.sum(-1, keepdim=True) if p["renormalize"] else y


def _topk_dense(x, i, p):  # the dense combine weights: torch.topk's values scattered into zeros
    g = torch.softmax(x, -1) if p["gate"] == "softmax" else torch.sigmoid(x)
    v, idx = torch.topk(g, int(p["k"]))
    return torch.zeros_like(g).scatter(-1, idx, v / v.sum(-1, keepdim=True) if p["renormalize"] else v)


def _group_norm(x, i, p, affine=True):
    M, N = x.shape
    C = int(p["channels"])
    w, b = (i["w"].float(), i["b"].float()) if affine else (None, None)
    return F.group_norm(x.view(M, C, N // C), int(p["groups"]), w, b, p["eps"]).view(M, N)


def _group_hidden(x, i, p, rms=True):  # x viewed as (M, G, N/G), a weight (and bias) per column, as FLA's tests
    M, N = x.shape
    G = int(p["groups"])
    xg = x.view(M, G, N // G)
    yg = F.rms_norm(xg, (N // G,), None, p["eps"]) if rms else F.layer_norm(xg, (N // G,), None, None, p["eps"])
    return yg.reshape(M, N) * i["w"].float() + (i["b"].float() if p.get("b") else 0.0)


def _top_k_filter(x, i, p, mask=True):  # as FlashInfer's and vLLM's tests write them (every tie at the k-th kept)
    kth = torch.topk(x, min(int(p["k"]), x.shape[-1]), dim=-1).values[:, -1:]
    if mask:
        return torch.where(x >= kth, x, torch.full_like(x, float("-inf")))
    kept = torch.where(x >= kth, x, torch.zeros_like(x))
    s = kept.sum(-1, keepdim=True)
    return kept / (s.clamp(min=float(p["sum_floor"])) if p.get("sum_floor") else s)


# Each op's first output as a typical test computes it in float32 torch: fn(x float32, inputs, params).
TORCH_EXPECTATION = {
    "rmsnorm": _rmsnorm,
    "fused_add_rmsnorm": lambda x, i, p: _rmsnorm(x, i, p, fused=True),
    "softmax": lambda x, i, p: torch.softmax(_logits(x, i, p), -1),
    "log_softmax": lambda x, i, p: torch.log_softmax(_logits(x, i, p), -1),
    "layernorm": lambda x, i, p: F.layer_norm(x, (x.shape[-1],), i["w"].float(), i["b"].float(), p["eps"]),
    "reduce_sum": lambda x, i, p: x.sum(-1),
    "cross_entropy": _cross_entropy,
    "cross_entropy_reduced": lambda x, i, p: _cross_entropy(x, i, p, reduced=True),
    "cross_entropy_soft": _cross_entropy_soft,
    "cross_entropy_soft_reduced": lambda x, i, p: (lambda y: y.mean() if p["reduction"] == "mean" else y.sum())(
        _cross_entropy_soft(x, i, p)).reshape(1),
    "merge_attn_states": _merge,
    "topk_softmax": _topk_softmax,
    "topk_softmax_dense": _topk_dense,
    "group_norm": _group_norm,
    "group_norm_noaffine": lambda x, i, p: _group_norm(x, i, p, affine=False),
    "row_amax": lambda x, i, p: x.abs().amax(-1),
    "row_mean": lambda x, i, p: x.mean(-1),
    "var_mean": lambda x, i, p: torch.var_mean(x, -1, correction=int(p["correction"]))[0],
    "l2norm": lambda x, i, p: F.normalize(x, p=2.0, dim=-1, eps=p["eps"]),
    "group_rmsnorm": _group_hidden,
    "group_layernorm": lambda x, i, p: _group_hidden(x, i, p, rms=False),
    "top_k_mask_logits": _top_k_filter,
    "top_k_renorm_probs": lambda x, i, p: _top_k_filter(x, i, p, mask=False),
    "row_argmax": lambda x, i, p: x.argmax(-1),  # the index, compared exactly (an int tensor)
}


def expected_output(op: str, inputs: dict, params: dict, out_dtype):
    """The op's first output in float32 by torch, cast to the output dtype (quantizing ops: the unfused pair)."""
    from verifier.ops import get_op

    op = get_op(op).base  # a variant (softmax[mask]): its op, on the logits its params say
    if op in QUANT_OPS:  # the unfused torch composition a test compares a fused quantizer with
        return _quantized_expectation(op, inputs, params, out_dtype)
    if op not in TORCH_EXPECTATION:
        raise ValueError(f"no torch expectation for op {op!r}: add one to TORCH_EXPECTATION")
    return TORCH_EXPECTATION[op](inputs["x"].float(), inputs, params).to(out_dtype)


QUANT_OPS = ("per_token_quant", "rmsnorm_quant")
QMAX = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0, "int8": 127.0}
# Tests of fused quantizers allow one step (vLLM's int8 tests: atol=1): a fused kernel differs from the unfused
# torch pair by a step wherever the pair's bf16 rounding crosses a boundary, so an exact comparison fails correct
# kernels. One step: int8 atol 1; fp8 rtol 2^-mantissa bits, atol its smallest subnormal.
QUANT_STEP = {"int8": (0.0, 1.0), "float8_e4m3fn": (2.0**-3, 2.0**-9), "float8_e5m2": (2.0**-2, 2.0**-16)}


def _quantized_expectation(op: str, inputs: dict, params: dict, out_dtype):
    """per_token_quant: x / (amax / qmax), clamped, cast (int8: torch.round first); rmsnorm_quant: torch's RMSNorm in
    the input dtype (as F.rms_norm returns it), then the static scale: the unfused pair."""
    import torch

    name = str(out_dtype).removeprefix("torch.")
    qmax = QMAX[name]
    x = inputs["x"].float()
    if op == "per_token_quant":
        s = x.abs().amax(-1, keepdim=True).clamp(min=params["floor"]) / qmax
        t = x / s
    else:
        w = inputs["w"].float() + float(params.get("offset", 0.0))
        y = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + params["eps"]) * w).to(inputs["x"].dtype)
        t = y.float() / inputs["scale"].float()
    t = t.clamp(-qmax, qmax)
    return (torch.round(t) if name == "int8" else t).to(out_dtype)


def _logits(x, inputs, params):
    """The softmax family's extra inputs and params as a test would write them (verifier/ops/softmax_inputs.py)."""
    import torch

    M, N = x.shape
    z = x * params.get("scale", 1.0)
    if params.get("softcap"):
        z = params["softcap"] * torch.tanh(z / params["softcap"])
    rows = torch.arange(M, device=x.device)
    i = ((rows % params["q_len"] if params.get("q_len") else rows) + params.get("causal_offset", 0))[:, None]
    j = torch.arange(N, device=x.device)[None, :]
    if "alibi_slopes" in inputs:
        z = z - inputs["alibi_slopes"].float()[:, None] * (i - j).abs().float()
    if "mask" in inputs:
        z = z + inputs["mask"].float()
    if params.get("causal"):
        z = z.masked_fill(j > i, float("-inf"))
    return z


def _one(spec, run, dt, M, N, device):
    import torch

    from verifier import dtypes as _dt
    from verifier.errors import Unsupported
    from verifier.ops import get_op

    reason = spec.check_supported(M, N, dt)
    if reason:
        return {"result": "refused", "detail": reason}
    op = get_op(spec.op)
    gen = torch.Generator(device="cpu").manual_seed(SEED)
    in_dt = _dt.torch_dtype(dt.input)
    params = spec.op_params()
    inputs = {t: (torch.randint(N, op.shape_of(t, M, N), generator=gen,  # integer roles: class labels in [0, N)
                                dtype=_dt.torch_dtype(op.input_dtype(t, dt, params))) if op.role(t).kind == "labels"
                  else (0.5 + torch.rand(op.shape_of(t, M, N), generator=gen)) if op.role(t).kind == "scale"  # > 0
                  else torch.randn(op.shape_of(t, M, N), generator=gen).to(  # a fixed dtype (an lse): its own
                      _dt.torch_dtype(op.role(t).dtype) if op.role(t).dtype else in_dt)).to(device) for t in op.inputs}
    out = op.outputs[0]
    shape = op.shape_of(out, M, N, params)
    n, slack = int(torch.Size(shape).numel()), 1 << 16
    buf = torch.zeros(n + slack, dtype=_dt.torch_dtype(op.output_dtype(out, dt, params)), device=device)
    outputs = {out: buf[:n].view(shape)}
    for t in op.outputs[1:]:  # the others (fused_add_rmsnorm's residual, updated in place: compared below)
        outputs[t] = inputs[t] if t in op.inouts else torch.zeros(
            op.shape_of(t, M, N, params), dtype=_dt.torch_dtype(op.output_dtype(t, dt, params)), device=device)
    before = {t: inputs[t].clone() for t in op.inouts}
    try:
        run(spec, inputs, outputs, params, dt, device)
    except Unsupported as e:
        return {"result": "refused", "detail": str(e)}
    inputs = {**inputs, **before}
    expected = expected_output(spec.op, inputs, params, outputs[out].dtype)
    try:
        if spec.op in QUANT_OPS:  # as numbers, one quantization step apart allowed (see QUANT_STEP)
            rtol, atol = QUANT_STEP[_dt.canonical(dt.output)]
            torch.testing.assert_close(outputs[out].cpu().float(), expected.cpu().float(), rtol=rtol, atol=atol)
        else:
            torch.testing.assert_close(outputs[out].cpu(), expected.cpu())
        if spec.op == "fused_add_rmsnorm":  # the stored residual too
            h = (inputs["x"].float() + inputs["residual"].float()).to(outputs["residual"].dtype)
            torch.testing.assert_close(outputs["residual"].cpu(), h.cpu())
        if spec.op == "topk_softmax":  # the picks, as vLLM's tests compare them: equal to torch.topk's
            g = inputs["x"].float()
            g = torch.softmax(g, -1) if params["gate"] == "softmax" else torch.sigmoid(g)
            torch.testing.assert_close(outputs["indices"].long().cpu(), torch.topk(g, int(params["k"]))[1].cpu())
    except AssertionError as e:
        return {"result": "caught", "detail": str(e).strip().splitlines()[0]}
    return {"result": "missed", "detail": ""}


def measure(device: str = "cpu", names=None) -> dict:
    matrix = _matrix()
    rows, twins = {}, {}
    for e in matrix.load_entries():
        if e.caught_by not in NUMERIC or (names and e.name not in names):
            continue
        if e.spec.kind == "cuda" and device != "cuda":
            rows[e.name] = {"skipped": "CUDA kernel: needs --device cuda on a GPU machine"}
            continue
        if e.spec.kind == "triton":
            from verifier.launch.triton import activate

            activate("interpreter" if device == "cpu" else "compiled")
        cells = _cells(e.spec, e.spec.dtypes, device)
        rows[e.name] = {"cells": cells, "caught_anywhere": any(c["result"] == "caught" for c in cells.values())}
        if e.twin not in twins:  # control: a correct kernel must pass the same comparison
            twins[e.twin] = _cells(e.twin_spec, e.twin_spec.dtypes, device)
    return {"device": device, "seed": SEED, "shapes": [list(s) for s in SHAPES],
            "expected": "torch op in float32 on the same rounded inputs, cast to the output dtype",
            "defects": rows, "twins": twins}


def _cells(spec, dts, device) -> dict:
    import numpy as np

    from verifier.launch import runner_for as _runner

    run = _runner(spec)
    cells = {}
    with np.errstate(all="ignore"):
        for dt in dts:
            for M, N in SHAPES:
                cells[f"{dt.tag} {M}x{N}"] = _one(spec, run, dt, M, N, device)
    return cells


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--defect", action="append", help="only this defect (repeatable)")
    args = ap.parse_args(argv)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print("assert_close_matrix: --device cuda asked for, but torch sees no CUDA GPU; run on a GPU "
                  "machine or use --device cpu", file=sys.stderr)
            return 2
    result = measure(args.device, set(args.defect) if args.defect else None)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    for name, row in result["defects"].items():
        cells = row.get("cells", {})
        summary = ", ".join(f"{k}: {v['result']}" for k, v in cells.items()) or row.get("skipped")
        print(f"{name}: {summary}")
    for name, cells in result["twins"].items():
        print(f"twin {name}: " + ", ".join(f"{k}: {v['result']}" for k, v in cells.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Softmax with attention's score transforms (masked_softmax.cu): one block of 256 threads per row, an online
(m, s) pass over the logits and a normalize pass, any N. Each kernel is one set of the softmax op's params
(docs/specs.md, "Softmax with extra inputs"); the tensors it takes are the op's optional inputs those params name.
"""
from verifier.spec import FLOAT_IO, CudaKernel, Launch, Pointer, Scalar, Stride

THREADS = 256


def _launches(M, N, dt, p):
    mask = p.get("mask")
    args = ("x", "mask" if mask else Pointer(None), "alibi_slopes" if p.get("alibi_slopes") else Pointer(None),
            "sinks" if p.get("sinks") else Pointer(None), "y", "M", "N", Stride("x", "int64"),
            Stride("mask", "int64") if mask and mask != "N" else Scalar("int64", 0), Stride("y", "int64"),
            Scalar("float32", float(p["scale"])), Scalar("float32", float(p["softcap"])),
            Scalar("int32", int(bool(p["causal"]))), Scalar("int32", int(p["causal_offset"])),
            Scalar("int32", int(p["q_len"])), Scalar("int32", int(p["masked_rows"] == "zeros")))
    return [Launch(f"masked_softmax_{dt.tag}", grid=(M,), block=(THREADS,), args=args)]


def _k(name, description, **params):
    return CudaKernel(name=name, op="softmax", source="masked_softmax.cu", dtypes=FLOAT_IO, launches=_launches,
                      params={"masked_rows": "zeros", **params}, description=description)


KERNELS = [
    _k("cuda-masked-softmax", "scale 0.125, a per-row additive mask, causal", scale=0.125, mask="MxN", causal=True),
    _k("cuda-masked-softmax-bcast-softcap", "scale 0.0883883, a mask[N] for every row, softcap 30",
       scale=0.08838834764831845, mask="N", softcap=30.0),
    _k("cuda-masked-softmax-alibi-sinks", "causal (bottom-right, offset 3), ALiBi slopes, one sink per row",
       causal=True, causal_offset=3, alibi_slopes=True, sinks=True),
]

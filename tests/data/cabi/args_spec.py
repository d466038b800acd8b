"""Launches passing every C-ABI argument kind to the entries of args.cu (tests/test_launch_args.py): each matches its
entry's PTX parameter list, so the build step finds nothing; ``echo`` is the GPU round trip's kernel."""
import math
import struct

import numpy as np

from verifier.spec import CudaKernel, Launch, Pointer, Scalar, Struct, dtypes

F32 = [dtypes("f32")]


def struct_p(M, N, dt, params):
    # struct P { const float* x; float* y; unsigned n; float eps; };  __global__ void k(P p)
    return [Launch("k", grid=(M,), block=(256,),
                   args=(Struct([("ptr", "x"), ("ptr", "y"), ("uint32", N), ("float32", params["eps"])]),))]


SCALARS = (Scalar("bool", True), Scalar("int8", -128), Scalar("uint8", 255), Scalar("int16", -32768),
           Scalar("uint16", 65535), Scalar("int32", -7), Scalar("uint32", 2 ** 32 - 1), Scalar("int64", -2 ** 63),
           Scalar("uint64", 2 ** 64 - 1), Scalar("float32", 1.5), Scalar("float64", math.pi))


def scalars(M, N, dt, params):
    return [Launch("scalars", grid=(1,), block=(32,), args=SCALARS + (Pointer("x", offset=1), "y"))]


def packs(M, N, dt, params):
    return [Launch("packs", grid=(1,), block=(32,),
                   args=("x", "y", Struct([("uint32[3]", (N, 7, "M"))]), Struct([("float32", 2.0)], align=16)))]


def functor(M, N, dt, params):
    return [Launch("apply<Identity>", grid=(M,), block=(32,), args=("x", "y", Struct([]), "N"))]


def echo_struct(N):
    inner = Struct([("uint32[3]", (7, 2 ** 32 - 1, N)), ("int8", -5)])
    return Struct([("ptr", "x"), ("ptr", Pointer("x", offset=3)), ("ptr", None), ("struct", inner),
                   ("float64", -2.5e300), ("uint16", 65535), ("uint64", 2 ** 64 - 2)], align=16)


def echo(M, N, dt, params):
    return [Launch("echo", grid=(1,), block=(32,),
                   args=(echo_struct(N),) + SCALARS + (Pointer("x", offset=5), Pointer(None), "y"))]


def _words(fmt: str, *values) -> list:
    return [int(w) for w in np.frombuffer(struct.pack("<" + fmt, *values), dtype=np.uint32)]


def echo_words(x, N: int) -> list:
    """The 29 words ``echo`` writes for input ``x`` (row length N): what every argument above declares."""
    want = [3, 1, 7, 2 ** 32 - 1, N, 2 ** 32 - 5]  # xoff - x, null, the uint3 pack, int8 -5 as an int
    want += _words("d", -2.5e300) + [65535] + _words("Q", 2 ** 64 - 2)
    want += [1, 2 ** 32 - 128, 255, 2 ** 32 - 32768, 65535, 2 ** 32 - 7, 2 ** 32 - 1]  # bool .. uint32
    want += _words("q", -2 ** 63) + _words("Q", 2 ** 64 - 1) + _words("f", 1.5) + _words("d", math.pi)
    want += [5, 1] + _words("f", float(np.asarray(x).reshape(-1)[5])) + [64]  # offset pointer, null, *xoff, sizeof
    return want


KERNELS = [
    CudaKernel(name="cabi-struct-p", op="rmsnorm", source="args.cu", launches=struct_p, dtypes=F32),
    CudaKernel(name="cabi-scalars", op="softmax", source="args.cu", launches=scalars, dtypes=F32),
    CudaKernel(name="cabi-packs", op="softmax", source="args.cu", launches=packs, dtypes=F32),
    CudaKernel(name="cabi-functor", op="softmax", source="args.cu", launches=functor, dtypes=F32),
    CudaKernel(name="cabi-echo", op="softmax", source="args.cu", launches=echo, dtypes=F32,
               supports=lambda M, N, dt: None if M * N >= 32 else "echo writes 29 words of y"),
]

"""dims_sum.cu with its shape in a Workspace holding values (tests/test_workspace_values*.py)."""
from verifier.spec import CudaKernel, Launch, Workspace, dtypes

INFO = Workspace("info", 4, "int64", values=lambda M, N: (M, N, N, 1))
WRONG = Workspace("info", 4, "int64", values=lambda M, N: (M, N - 1, N, 1))  # the last column left out of the sum


def _launches(ws):
    return lambda M, N, dt, p: [Launch("dims_sum_f32", (M,), (32,), (ws, "x", "y"))]


KERNELS = [CudaKernel(name=f"dims-sum{tag}", op="reduce_sum", source="dims_sum.cu", dtypes=[dtypes("f32")],
                      launches=_launches(ws)) for tag, ws in (("", INFO), ("-wrong-dims", WRONG))]

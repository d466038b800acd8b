"""coop_sum.cu: launched cooperatively (as its host must), and, as a defect, with a plain launch."""
from verifier.spec import CudaKernel, Launch, Workspace, dtypes

BLOCKS = 8  # resident at once on any sm_80+ GPU
PARTIAL = Workspace("partial", BLOCKS)


def _launches(cooperative):
    return lambda M, N, dt, p: [Launch("coop_row_sum", (BLOCKS,), (256,), ("x", "y", PARTIAL, "M", "N"),
                                       cooperative=cooperative)]


KERNELS = [CudaKernel(name="coop-row-sum", op="reduce_sum", source="coop_sum.cu", dtypes=[dtypes("f32")],
                      launches=_launches(True)),
           CudaKernel(name="coop-row-sum-plain-launch", op="reduce_sum", source="coop_sum.cu", dtypes=[dtypes("f32")],
                      launches=_launches(False))]

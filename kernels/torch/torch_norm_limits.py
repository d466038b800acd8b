"""What torch's own norms cannot do, declared in the supports() of the callables built on them (kernels/torch)."""


def below_2pow32(M, N, dt):
    # Finding of this framework (torch 2.11+cu130 on an H200, docs/gpu-runs/2026-12-04-issue-36-large.md run 3, and
    # the compositions over them in docs/gpu-runs/2026-12-05-issues-36-37.md): F.rms_norm and F.layer_norm on CUDA
    # give wrong rows (zeros) past element 2^32 of a plain contiguous tensor (262208 x 16384 bf16: every row from
    # 262144 on); caught by large_index_2pow32. Declared, not hidden.
    if M * N >= 2 ** 32:
        return "torch's CUDA rms_norm / layer_norm are wrong past element 2^32 (torch 2.11, measured)"
    return None

"""CUDA defect catalogue: each kernel reproduces one known pitfall (DEFECTS says which, which check
class catches it, on which input, and its correct twin). Launching them needs a CUDA GPU; the
resources defect is caught on any machine with nvcc (ptxas -v), and the static ones (lint_defects.cu) by `verifier lint`
on the PTX.

Named defects.py, not spec.py, on purpose: `verifier check kernels/` must not pick these up (they
fail by design). Check one explicitly: `verifier check kernels/defects/cuda/defects.py --kernel NAME`
(sanitizer classes: add --sanitize). Twins written here are in KERNELS too; the others are bundled
kernels of kernels/cuda/*_spec.py.
"""
from verifier.spec import (CudaKernel, Expectations, Launch, Scalar, Stride, Workspace, dtypes, max_row,
                           register_resident, whole_vectors)

F32 = [dtypes("f32")]
THREADS = 256
WARP_ROWS = 4
SPLIT_COLS = 512  # columns per block of the split (atomic) reduction
NORM_ARGS = ("x", "w", "y", "M", "N", "eps")
PARTIALS = Workspace("part", lambda M, N: 32 * M)  # 32 warp partials per block (one block per row)


def _one(entry, args, block=THREADS):
    def launches(M, N, dt, params):
        return [Launch(entry=entry.format(tag=dt.tag), grid=(M,), block=(block,), args=args)]
    return launches


def _grid_y(entry, args, block=THREADS):
    """One block per row on grid.y (the defect: grid.y and grid.z stop at 65,535)."""
    def launches(M, N, dt, params):
        return [Launch(entry=entry.format(tag=dt.tag), grid=(1, M), block=(block,), args=args)]
    return launches


def _warp(entry):
    def launches(M, N, dt, params):
        grid = ((M + WARP_ROWS - 1) // WARP_ROWS,)
        return [Launch(entry=f"{entry}_d1024_{dt.tag}", grid=grid, block=(32 * WARP_ROWS,), args=("x", "y", "M", "N"))]
    return launches


def _warp_rms(entry, max_blocks=None):
    """Warp-per-row RMSNorm of warp_sync_defects.cu: WARP_ROWS rows per block (a grid of at most ``max_blocks``
    blocks makes each warp walk several rows)."""
    def launches(M, N, dt, params):
        blocks = -(-M // WARP_ROWS)
        grid = (min(blocks, max_blocks) if max_blocks else blocks,)
        return [Launch(entry=f"{entry}_{dt.tag}", grid=grid, block=(32 * WARP_ROWS,), args=NORM_ARGS)]
    return launches


def _split_reduce(M, N, dt, params):
    split = max(1, -(-N // SPLIT_COLS))
    return [Launch(entry="reduce_split_zero_f32", grid=(-(-M // THREADS),), block=(THREADS,), args=("y", "M")),
            Launch(entry="reduce_split_atomic_f32", grid=(M, split), block=(THREADS,), args=("x", "y", "M", "N"))]


_DET = Expectations(deterministic=True)
_WARP_LIMIT = max_row(1024, "cuda-online-softmax-block")
BF16 = [dtypes("bf16")]
ROWS_ARGS = ("x", "w", "y", "M", "N", Stride("x", "int64"), Stride("y", "int64"), "eps")
FAR_ARGS = ("x", "residual", "w", "y", "M", "N", Stride("x", "int64"), Stride("residual", "int64"),
            Stride("y", "int64"), "eps")


def _ce_neg_log_p(M, N, dt, params):
    return [Launch("ce_neg_log_p_bf16tof32_i64", grid=(M,), block=(THREADS,),
                   args=("x", "labels", "loss", "M", "N", Scalar("int64", params["ignore_index"])))]


def _k(name, op, source, launches, description, dts=F32, supports=None, expectations=_DET):
    kw = {"supports": supports} if supports else {}
    return CudaKernel(name=name, op=op, source=source, launches=launches, dtypes=dts, math_mode="precise",
                      expectations=expectations, description=description, **kw)


KERNELS = [
    _k("cuda-rmsnorm-block", "rmsnorm", "sync_defects.cu", _one("rms_block_ok_{tag}", NORM_ARGS),
       "RMSNorm, block per row, warp partials through shared memory with both barriers (twin)"),
    _k("defect-missing-syncthreads", "rmsnorm", "sync_defects.cu", _one("rms_block_missing_sync_{tag}", NORM_ARGS),
       "RMSNorm whose block reduce reads the warp partials without __syncthreads after writing them"),
    _k("defect-block-reduce-twice-no-barrier", "layernorm", "sync_defects.cu",
       _one("ln_twice_no_barrier_{tag}_e4", ("x", "w", "b", "y", "M", "N", "eps")),
       "two-pass LayerNorm calling a block reduce twice; the reduce has no barrier before its write",
       supports=max_row(1024, "cuda-layernorm-welford"), expectations=register_resident()),
    _k("cuda-rmsnorm-tree", "rmsnorm", "sync_defects.cu", _one("rms_tree_ok_{tag}", NORM_ARGS),
       "RMSNorm with a shared-memory tree reduction, __syncthreads outside the branch (twin)"),
    _k("defect-divergent-syncthreads", "rmsnorm", "sync_defects.cu", _one("rms_tree_divergent_{tag}", NORM_ARGS),
       "RMSNorm tree reduction with __syncthreads inside `if (t < stride)`"),
    _k("cuda-rmsnorm-w4", "rmsnorm", "memory_defects.cu", _one("rms_w4_{tag}", NORM_ARGS),
       "RMSNorm with float4 weight loads, refusing N % 4 != 0 (twin)", supports=whole_vectors("cuda-rmsnorm-block")),
    _k("defect-float4-tail-overread", "rmsnorm", "memory_defects.cu", _one("rms_w4_{tag}", NORM_ARGS),
       "RMSNorm with float4 weight loads rounded up to ceil(N/4) vectors, accepting any N"),
    _k("defect-atomic-split-reduce", "reduce_sum", "memory_defects.cu", _split_reduce,
       "row sum split over blocks of 512 columns, fp32 atomicAdd of the partials, declared deterministic"),
    _k("defect-dynamic-register-index", "softmax", "resource_defects.cu", _one("softmax_regs_dynamic_{tag}", ("x", "y", "M", "N")),
       "softmax with the row in a register array indexed by a run-time-bounded loop, declared register-resident",
       supports=max_row(8192, "cuda-softmax-s2"), expectations=register_resident()),
    _k("defect-spill-undeclared", "rmsnorm", "resource_defects.cu", _one("rmsnorm_regs_spill_{tag}", NORM_ARGS),
       "register-resident RMSNorm capped at 32 registers by __launch_bounds__(256, 8): spills its row; "
       "default Expectations (nothing declared)", supports=max_row(8192, "cuda-rmsnorm-block"),
       expectations=Expectations()),
    _k("defect-spill-register-resident", "rmsnorm", "resource_defects.cu", _one("rmsnorm_regs_spill_{tag}", NORM_ARGS),
       "the same spilling RMSNorm, declared register_resident()", supports=max_row(8192, "cuda-rmsnorm-block"),
       expectations=register_resident()),
    # lint_defects.cu: one defect per class of `verifier lint` (check class static), found without a GPU
    _k("cuda-rmsnorm-small", "rmsnorm", "lint_defects.cu", _one("rms_small_ok_{tag}", NORM_ARGS),
       "RMSNorm for rows up to 256, one element per thread, padding threads stay in the block reduce (twin)",
       supports=max_row(256, "cuda-rmsnorm-block")),
    _k("defect-early-exit-before-barrier", "rmsnorm", "lint_defects.cu", _one("rms_small_early_exit_{tag}", NORM_ARGS),
       "RMSNorm for rows up to 256 whose padding threads return before the block reduce's barriers",
       supports=max_row(256, "cuda-rmsnorm-block")),
    _k("defect-tree-first-barrier-missing", "rmsnorm", "lint_defects.cu",
       _one("rms_tree_first_sync_missing_{tag}", NORM_ARGS),
       "RMSNorm tree reduction without the barrier between the partials' store and the first stage's read"),
    _k("defect-shuffle-inactive-lanes", "rmsnorm", "lint_defects.cu", _one("rms_guarded_shfl_{tag}", NORM_ARGS),
       "RMSNorm whose block reduce runs a full-mask warp_sum inside `if (lane < nwarps)`"),
    _k("cuda-rmsnorm-global-scratch", "rmsnorm", "lint_defects.cu",
       _one("rms_global_scratch_ok_{tag}", ("x", "w", "y", PARTIALS, "M", "N", "eps")),
       "RMSNorm with the warp partials in a global workspace, 32 floats per block (twin)"),
    _k("defect-global-scratch-shared-by-blocks", "rmsnorm", "lint_defects.cu",
       _one("rms_global_scratch_shared_by_blocks_{tag}", ("x", "w", "y", PARTIALS, "M", "N", "eps")),
       "RMSNorm with the warp partials in a global workspace indexed by warp only: all blocks share 32 floats"),
    # warp_sync_defects.cu: warp-synchronous shared memory (warp per row), correct forms a race checker must clear
    _k("cuda-rmsnorm-warp-store-all", "rmsnorm", "warp_sync_defects.cu", _warp_rms("rms_warp_store_all"),
       "RMSNorm, warp per row: every lane stores the xor-butterfly total to the warp's slot, __syncwarp, reads (twin)"),
    _k("defect-warp-down-total-stored-by-all-lanes", "rmsnorm", "warp_sync_defects.cu",
       _warp_rms("rms_warp_down_store_all"),
       "RMSNorm, warp per row: a shfl.down reduction (total in lane 0 only) stored to one slot by every lane"),
    _k("cuda-rmsnorm-warp-rows-loop", "rmsnorm", "warp_sync_defects.cu", _warp_rms("rms_warp_rows_loop", 8),
       "RMSNorm, warps walk rows reusing their slot: the next row's store is ordered by its shuffles (twin)"),
    _k("cuda-rmsnorm-warp-lane0", "rmsnorm", "warp_sync_defects.cu", _warp_rms("rms_warp_lane0"),
       "RMSNorm, warp per row: lane 0 stores the total, then rstd over it, each followed by __syncwarp (twin)"),
    _k("defect-warp-lane0-store-no-syncwarp", "rmsnorm", "warp_sync_defects.cu",
       _warp_rms("rms_warp_lane0_no_syncwarp"),
       "RMSNorm, warp per row: lanes read the slot lane 0 stores with no __syncwarp between"),
    _k("cuda-rmsnorm-warp-atomic-rows", "rmsnorm", "warp_sync_defects.cu", _warp_rms("rms_warp_atomic_rows", 8),
       "RMSNorm, warps walk rows: per row the slot is zeroed, atomicAdd-ed and read, __syncwarp between (twin)",
       expectations=Expectations(deterministic=False)),
    _k("defect-warp-slot-reuse-no-syncwarp", "rmsnorm", "warp_sync_defects.cu",
       _warp_rms("rms_warp_atomic_rows_no_syncwarp", 8),
       "RMSNorm, warps walk rows: lane 0 zeroes the slot for the next row while lanes may still read it",
       expectations=Expectations(deterministic=False)),
    _k("defect-cuda-warp-softmax-no-merge-guard", "softmax", "online_softmax_defects.cu",
       _warp("online_softmax_warp_no_merge_guard"), "seed warp online softmax, butterfly merge without the empty-lane guard",
       dts=[dtypes("f32"), dtypes("bf16")], supports=_WARP_LIMIT, expectations=register_resident()),
    _k("defect-cuda-warp-softmax-no-update-guard", "softmax", "online_softmax_defects.cu",
       _warp("online_softmax_warp_no_update_guard"), "seed warp online softmax, per-element update without the -inf guard",
       dts=[dtypes("f32"), dtypes("bf16")], supports=_WARP_LIMIT, expectations=register_resident()),
    # input_defects.cu: what only callers' inputs expose (strided rows, unaligned views, > 2^31 elements, log domain)
    _k("cuda-rmsnorm-rows", "rmsnorm", "input_defects.cu", _one("rms_rows_ok_{tag}", ROWS_ARGS),
       "RMSNorm, block per row, rows at the launch's int64 row strides, 64-bit offsets (twin)", dts=BF16),
    _k("defect-cuda-rmsnorm-int32-row-offset", "rmsnorm", "input_defects.cu",
       _one("rms_rows_int32_offset_{tag}", ROWS_ARGS), "RMSNorm computing `int base = blockIdx.x * stride`", dts=BF16),
    # issue #36: the large family at ci (aliased pages): past 2^32 elements, more than 65,535 rows, stride >= 2^31
    _k("defect-cuda-rmsnorm-unsigned-row-offset", "rmsnorm", "input_defects.cu",
       _one("rms_rows_unsigned_offset_{tag}", ROWS_ARGS),
       "RMSNorm computing `unsigned base = blockIdx.x * stride` (32-bit unsigned product)", dts=BF16),
    _k("defect-cuda-rmsnorm-rows-on-grid-y", "rmsnorm", "input_defects.cu", _grid_y("rms_rows_grid_y_{tag}", ROWS_ARGS),
       "RMSNorm launching one block per row on grid.y", dts=BF16),
    _k("defect-cuda-rmsnorm-int32-row-stride", "rmsnorm", "input_defects.cu",
       _one("rms_rows_int32_stride_{tag}", ROWS_ARGS),
       "RMSNorm narrowing the row strides to int before a 64-bit row * stride", dts=BF16),
    _k("defect-cuda-rmsnorm-ignores-row-stride", "rmsnorm", "input_defects.cu",
       _one("rms_rows_ignores_stride_{tag}", ROWS_ARGS), "RMSNorm taking the row strides but reading row r at r * N",
       dts=BF16),
    _k("cuda-fused-add-rmsnorm-vec", "fused_add_rmsnorm", "input_defects.cu", _one("far_vec_ok_{tag}", FAR_ARGS),
       "fused add + RMSNorm, 16-byte vector loads when N % 8 == 0 and every row pointer is 16-byte aligned, "
       "else scalar (twin)", dts=BF16),
    _k("defect-cuda-fused-add-rmsnorm-vec-unaligned", "fused_add_rmsnorm", "input_defects.cu",
       _one("far_vec_unchecked_{tag}", FAR_ARGS), "fused add + RMSNorm choosing 16-byte vector loads from N % 8 alone",
       dts=BF16),
    _k("defect-cuda-ce-neg-log-softmax", "cross_entropy", "input_defects.cu", _ce_neg_log_p,
       "cross entropy as -log(exp(x[label] - max) / sum)", dts=[dtypes("bf16", "f32")]),
]

DEFECTS = {
    "defect-missing-syncthreads": {
        "caught_by": "racecheck", "twin": "cuda-rmsnorm-block", "device": "gpu",
        "pitfall": "missing __syncthreads between writing the warp partials to shared memory and reading them",
        "exposing_input": "n1000"},
    "defect-block-reduce-twice-no-barrier": {
        "caught_by": "racecheck", "twin": "cuda-layernorm-twopass", "device": "gpu",
        "pitfall": "block reduce called twice on one scratch without a barrier before the second write",
        "exposing_input": "n1000"},
    "defect-divergent-syncthreads": {
        "caught_by": "synccheck", "twin": "cuda-rmsnorm-tree", "device": "gpu",
        "pitfall": "__syncthreads inside a thread-dependent branch while the other lanes are alive",
        "exposing_input": "normal_small"},
    "defect-float4-tail-overread": {
        "caught_by": "memcheck", "twin": "cuda-rmsnorm-w4", "device": "gpu",
        "pitfall": "float4 loads rounded up past the end of w for N % 4 != 0, accepted by supports()",
        "exposing_input": "cols_mod4_1029"},
    "defect-spill-undeclared": {
        "caught_by": "resources", "severity": "warning", "twin": "cuda-rmsnorm-block", "device": "cpu",
        "pitfall": "row kept in registers spills to local memory (ptxas -v: spill stores/loads) and the spec "
                   "declares no limit: a warning, not a silent pass",
        "exposing_input": "ptxas -v (no input)"},
    "defect-spill-register-resident": {
        "caught_by": "resources", "twin": "cuda-rmsnorm-block", "device": "cpu",
        "pitfall": "row kept in registers spills to local memory although declared register_resident()",
        "exposing_input": "ptxas -v (no input)"},
    "defect-atomic-split-reduce": {
        "caught_by": "determinism", "twin": "cuda-allreduce-f32x1", "device": "gpu",
        "pitfall": "fp32 atomicAdd of per-block partial sums (arrival order varies) declared deterministic",
        "exposing_input": "determinism probe (64, 4096)"},
    "defect-dynamic-register-index": {
        "caught_by": "resources", "twin": "cuda-softmax-s3", "device": "cpu",
        "pitfall": "register array indexed by a run-time-bounded loop goes to local memory (stack frame)",
        "exposing_input": "ptxas -v (no input)"},
    "defect-early-exit-before-barrier": {
        "caught_by": "static", "twin": "cuda-rmsnorm-small", "device": "cpu",
        "pitfall": "threads past the row end return before a block reduce: its __syncthreads and full-mask "
                   "shuffles run without them",
        "exposing_input": "PTX (no input; verifier lint)"},
    "defect-tree-first-barrier-missing": {
        "caught_by": "static", "twin": "cuda-rmsnorm-tree", "device": "cpu",
        "pitfall": "tree reduction reads another thread's partial before the barrier after the partials' store",
        "exposing_input": "PTX (no input; verifier lint)"},
    "defect-shuffle-inactive-lanes": {
        "caught_by": "static", "twin": "cuda-rmsnorm-block", "device": "cpu",
        "pitfall": "__shfl_xor_sync(0xffffffff) inside `if (lane < nwarps)`: the mask names lanes that are not there",
        "exposing_input": "PTX (no input; verifier lint)"},
    "defect-global-scratch-shared-by-blocks": {
        "caught_by": "static", "twin": "cuda-rmsnorm-global-scratch", "device": "cpu",
        "pitfall": "global workspace indexed by warp, not by block: every block of the grid writes the same floats",
        "exposing_input": "PTX (no input; verifier lint)"},
    "defect-warp-down-total-stored-by-all-lanes": {
        "caught_by": "static", "twin": "cuda-rmsnorm-warp-store-all", "device": "cpu",
        "pitfall": "a shfl.down reduction leaves the total in lane 0 only, yet every lane stores its value to the "
                   "warp's slot: 32 different values race to one address (a warp-uniform model must not clear it)",
        "exposing_input": "PTX (no input; verifier lint)"},
    "defect-warp-lane0-store-no-syncwarp": {
        "caught_by": "static", "twin": "cuda-rmsnorm-warp-lane0", "device": "cpu",
        "pitfall": "warp-synchronous code without __syncwarp between lane 0's shared store and the other lanes' "
                   "load of it (RAW within one warp)",
        "exposing_input": "PTX (no input; verifier lint)"},
    "defect-warp-slot-reuse-no-syncwarp": {
        "caught_by": "static", "twin": "cuda-rmsnorm-warp-atomic-rows", "device": "cpu",
        "pitfall": "a warp reuses its slot for the next row with no __syncwarp after the lanes' read of this row's "
                   "sum: lane 0's reset races with them (WAR within one warp, no shuffle between to order it)",
        "exposing_input": "PTX (no input; verifier lint)"},
    "defect-cuda-warp-softmax-no-merge-guard": {
        "caught_by": "nan-inf", "twin": "cuda-online-softmax-warp", "device": "gpu",
        "pitfall": "-inf identity in the (m, l) butterfly merge: two empty lanes give NaN (d <= 15)",
        "exposing_input": "d7_below_warp"},
    "defect-cuda-warp-softmax-no-update-guard": {
        "caught_by": "nan-inf", "twin": "cuda-online-softmax-warp", "device": "gpu",
        "pitfall": "per-element online update without the -inf guard: a lane holding only -inf gets l = NaN",
        "exposing_input": "one_neg_inf_row32"},
    "defect-cuda-rmsnorm-int32-row-offset": {
        "caught_by": "crash", "twin": "cuda-rmsnorm-rows", "device": "gpu",
        "pitfall": "`int base = blockIdx.x * N`: past 2^31 elements the row offset wraps negative (an illegal "
                   "address), as PyTorch's and Liger-Kernel's cross entropy shipped it",
        "exposing_input": "large_index_2pow31"},
    "defect-cuda-rmsnorm-unsigned-row-offset": {
        "caught_by": "value", "twin": "cuda-rmsnorm-rows", "device": "gpu",
        "pitfall": "`unsigned base = blockIdx.x * N`: right past 2^31, past 2^32 elements the offset wraps onto row "
                   "r - 2^32 / N, read from and written over there (silently wrong, no fault)",
        "exposing_input": "large_index_2pow32"},
    "defect-cuda-rmsnorm-rows-on-grid-y": {
        "caught_by": "build", "twin": "cuda-rmsnorm-rows", "device": "cpu",
        "pitfall": "one block per row on grid.y: grid.y and grid.z stop at 65,535, so more rows do not launch "
                   "(the launch check sees the grid at the case's shape before any launch; on a GPU it fails)",
        "exposing_input": "rows_past_65535"},
    "defect-cuda-rmsnorm-int32-row-stride": {
        "caught_by": "crash", "twin": "cuda-rmsnorm-rows", "device": "gpu",
        "pitfall": "row stride narrowed to int (`int s = x.stride(0)`) before a 64-bit row * s: a stride of 2^31 "
                   "or more wraps negative (an illegal address); right on every contiguous tensor",
        "exposing_input": "row_stride_2pow31"},
    "defect-cuda-rmsnorm-ignores-row-stride": {
        "caught_by": "value", "twin": "cuda-rmsnorm-rows", "device": "gpu",
        "pitfall": "row stride taken but ignored (row r read at r * N): silently wrong on a slice qkv[:, :N]",
        "exposing_input": "strided_rows_pad64"},
    "defect-cuda-fused-add-rmsnorm-vec-unaligned": {
        "caught_by": "crash", "twin": "cuda-fused-add-rmsnorm-vec", "device": "gpu",
        "pitfall": "16-byte vector loads chosen from N % 8 alone: 'misaligned address' on a tensor one element "
                   "past a 16-byte boundary (a view into a larger buffer)",
        "exposing_input": "unaligned_1elem_past_16bytes"},
    "defect-cuda-ce-neg-log-softmax": {
        "caught_by": "nan-inf", "twin": "cuda-cross-entropy", "device": "gpu",
        "pitfall": "cross entropy as -log(softmax(x)[label]): +inf where the loss is a few hundred",
        "exposing_input": "ce_label_at_min_randn50"},
}

# --- issue #37, norm variants (norm_variants_defects.cu; twins: cuda-row-amax of kernels/cuda/norm_variants_spec.py
# and cuda-row-amax-split here)
AMAX_SPLIT_COLS = 1024  # columns per block of the split abs-max


def _amax_split(entry):
    def launches(M, N, dt, params):
        split = max(1, -(-N // AMAX_SPLIT_COLS))
        return [Launch("row_amax_split_zero_f32", grid=(-(-M // THREADS),), block=(THREADS,), args=("y", "M")),
                Launch(entry, grid=(M, split), block=(THREADS,), args=("x", "y", "N", Stride("x", "int64")))]
    return launches


KERNELS += [
    CudaKernel(name="defect-cuda-row-amax-fmaxf", op="row_amax", source="norm_variants_defects.cu",
               dtypes=[dtypes("f32"), dtypes("f16"), dtypes("bf16")],
               launches=_one("row_amax_fmaxf_{tag}", ("x", "y", "N", Stride("x", "int64"))),
               description="row abs-max with fmaxf: a NaN in the row is dropped"),
    CudaKernel(name="cuda-row-amax-split", op="row_amax", source="norm_variants_defects.cu", dtypes=F32,
               launches=_amax_split("row_amax_split_f32"), expectations=_DET,
               description="row abs-max split over blocks of 1024 columns, atomicMax on the bits (twin)"),
    CudaKernel(name="defect-cuda-row-amax-split-race", op="row_amax", source="norm_variants_defects.cu", dtypes=F32,
               launches=_amax_split("row_amax_split_nosync_f32"), expectations=_DET,
               description="split row abs-max whose warp partials are read without a barrier"),
]
DEFECTS.update({
    "defect-cuda-row-amax-fmaxf": {
        "caught_by": "nan-inf", "twin": "cuda-row-amax", "device": "gpu",
        "pitfall": "abs-max with fmaxf: a NaN in the row is dropped and the largest number reported (torch.amax "
                   "gives NaN)",
        "exposing_input": "amax_nan_inf_rows"},
    "defect-cuda-row-amax-split-race": {
        "caught_by": "racecheck", "twin": "cuda-row-amax-split", "device": "gpu",
        "pitfall": "an abs-max split across blocks whose per-block merge reads the warps' shared-memory partials "
                   "without __syncthreads: a race, a partial max some runs",
        "exposing_input": "normal_small"},
})

# --- each row's argmax (greedy sampling; argmax_defects.cu instantiates kernels/cuda/argmax.cu's template with one
# defect each; twin: cuda-row-argmax of kernels/cuda/argmax_spec.py)
_ARGMAX_ARGS = ("x", "index", "M", "N", Stride("x", "int64"))
KERNELS += [
    CudaKernel(name="defect-cuda-argmax-lane-drops-index", op="row_argmax", source="argmax_defects.cu",
               dtypes=[dtypes("f32"), dtypes("bf16")], expectations=_DET,
               launches=_one("row_argmax_lane_drops_index_{tag}", _ARGMAX_ARGS),
               description="warp merge takes the other lane's larger value, keeps its own column"),
    CudaKernel(name="defect-cuda-argmax-half-compare", op="row_argmax", source="argmax_defects.cu", dtypes=F32,
               expectations=_DET, launches=_one("row_argmax_half_compare_{tag}", _ARGMAX_ARGS),
               description="f32 logits compared after rounding to half"),
]
DEFECTS.update({
    "defect-cuda-argmax-lane-drops-index": {
        "caught_by": "value", "twin": "cuda-row-argmax", "device": "gpu",
        "pitfall": "a (value, index) pair reduced as a value: the warp shuffle merge keeps the larger value but "
                   "not its column, so the index is some lane's own maximum",
        "exposing_input": "normal_small"},
    "defect-cuda-argmax-half-compare": {
        "caught_by": "value", "twin": "cuda-row-argmax", "device": "gpu",
        "pitfall": "f32 logits compared in half precision: a maximum within a half ULP of an earlier second "
                   "largest loses to it",
        "exposing_input": "argmax_one_ulp"},
})

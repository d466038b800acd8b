// Defective row argmax kernels (op row_argmax); twins: kernels/cuda/argmax.cu's row_argmax entries (cuda-row-argmax,
// kernels/cuda/argmax_spec.py), whose template this file instantiates with one defect each:
//   row_argmax_lane_drops_index_<tag>: the warp shuffle merge takes the other lane's larger value but keeps its own
//     column: the index written is some lane's first maximum, not the row's (a (value, index) pair reduced as a value).
//   row_argmax_half_compare_f32: f32 logits compared after rounding to half: a maximum within a half ULP of an
//     earlier second largest loses to it (and logits past 65504 all tie at +inf).
#include "../../cuda/argmax.cu"

#define ARGMAX_DEFECT(NAME, TAG, T, DEFECT)                                                                         \
    extern "C" __global__ void __launch_bounds__(BLOCK) NAME##_##TAG(const T* x, long long* index, int M, int N,    \
                                                                     long long sx) {                                \
        row_argmax<T, long long, false, DEFECT>(x, index, nullptr, N, sx);                                          \
    }

ARGMAX_DEFECT(row_argmax_lane_drops_index, f32, float, 1)
ARGMAX_DEFECT(row_argmax_lane_drops_index, bf16, __nv_bfloat16, 1)
ARGMAX_DEFECT(row_argmax_half_compare, f32, float, 2)

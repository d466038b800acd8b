// Cross entropy with int64 labels read as int32 (a kernel written for 32-bit labels, handed
// torch's int64 targets). Row i reads word i of the label buffer: the low or high half of label
// i / 2, so most rows take another row's class (or 0, or -1: the logit before the row). Correct
// twin: cuda-cross-entropy (kernels/cuda/cross_entropy.cu), which reads labels in their own width.
#include "../../cuda/cross_entropy.cu"

#define KV_CE_BAD(TAG, T)                                                                                 \
    extern "C" __global__ void __launch_bounds__(kCeThreads)                                              \
        cross_entropy_label_as_i32_##TAG(const T* x, const long long* labels, float* loss, int M, int N, \
                                         long long ignore_index) {                                        \
        ce_row<T, int>(x, reinterpret_cast<const int*>(labels), loss, N, ignore_index);                   \
    }

KV_CE_BAD(f32, float)
KV_CE_BAD(bf16tof32, __nv_bfloat16)

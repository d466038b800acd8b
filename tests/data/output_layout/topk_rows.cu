// MoE routing written as ggml's topk_moe lays it out: the ids of row r start at ids + r * E (the first k columns of
// an [M, E] argsort buffer), the weights at values + r * k. One thread per row: softmax over the E logits, then the
// k largest gates, largest first (the lowest expert on a tie). Test data for output_layout (tests/test_output_layout*).
#include <math.h>

template <bool IDS_AT_E>
__device__ void topk_rows(const float* x, float* values, int* ids, int M, int E, int k) {
    const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= M) return;
    const float* row = x + r * E;
    int* out = ids + r * (IDS_AT_E ? E : k);  // the defect: ids rows k apart, where the caller's buffer has E
    float m = -INFINITY;
    for (int j = 0; j < E; ++j) m = fmaxf(m, row[j]);
    float s = 0.f;
    for (int j = 0; j < E; ++j) s += expf(row[j] - m);
    for (int t = 0; t < k; ++t) {
        int best = -1;
        float bv = -INFINITY;
        for (int j = 0; j < E; ++j) {
            bool taken = false;
            for (int u = 0; u < t; ++u) taken |= out[u] == j;
            const float g = expf(row[j] - m) / s;
            if (!taken && (best < 0 || g > bv)) {
                best = j;
                bv = g;
            }
        }
        out[t] = best;
        values[r * k + t] = bv;
    }
}

extern "C" __global__ void topk_ids_at_e(const float* x, float* values, int* ids, int M, int E, int k) {
    topk_rows<true>(x, values, ids, M, E, k);
}

extern "C" __global__ void topk_ids_at_k(const float* x, float* values, int* ids, int M, int E, int k) {
    topk_rows<false>(x, values, ids, M, E, k);
}

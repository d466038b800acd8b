/* Empty stand-in (ours): flashinfer/norm.cuh reaches <cublasLt.h> through trtllm/common headers but uses nothing
   from it, and a CPU build machine need not have the CUDA math libraries installed. */

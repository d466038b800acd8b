/* Empty stand-in (ours): flashinfer/sampling.cuh includes <curand_philox4x32_x.h> for its samplers; the softmax kernel uses
   nothing from it, and a CPU build machine need not have the CUDA math libraries installed. */

#!/bin/sh
# Regenerates the ptxas -v fixtures from fixture_kernels.cu (raw compiler stderr, unedited).
# Run from this directory. Needs nvcc 13 on PATH; the CUDA 12 capture also needs the ptxas of
# the pip wheel nvidia-cuda-nvcc-cu12 (12.9.86): set PTXAS12 to it.
set -e
FLAGS="-lineinfo -O3 -std=c++17 -maxrregcount=32 -Xptxas -v"
nvcc -cubin -arch=sm_90 $FLAGS -o /tmp/fixture.cubin fixture_kernels.cu 2> cuda13_sm90.txt
# Two architectures in one report (same mangled names twice).
nvcc -c -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 $FLAGS \
  -o /tmp/fixture.o fixture_kernels.cu 2> cuda13_sm80_sm90.txt
if [ -n "$PTXAS12" ]; then
  # ptxas 12.9 rejects nvcc 13's PTX ISA 9.0 header; the kernels use nothing newer than 8.8.
  nvcc -ptx -arch=sm_90 -lineinfo -O3 -std=c++17 -o /tmp/fixture.ptx fixture_kernels.cu
  sed 's/^\.version 9\.0$/.version 8.8/' /tmp/fixture.ptx > /tmp/fixture88.ptx
  "$PTXAS12" -arch=sm_90 -v -maxrregcount=32 -lineinfo -o /tmp/fixture12.cubin /tmp/fixture88.ptx 2> cuda12_9_sm90.txt
fi

"""The gpu stage: the CUDA driver API through ctypes (``libcuda``), the one answer to "is there a GPU, which
arch" (``probe``), and one GPU per pytest-xdist worker (``pinning``). Nothing here imports torch."""

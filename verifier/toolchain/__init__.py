"""The toolchain stage: external tools and processes — nvcc and its dependency-keyed cache (``nvcc``), ptxas
resource reports (``ptxas``), the checked-in suppression files (``suppressions``) and child processes with one
protocol and one kill-on-timeout (``proc``)."""

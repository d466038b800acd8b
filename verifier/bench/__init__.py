"""``verifier bench``: achieved bandwidth of kernels next to a device-to-device copy of the same bytes.

plan.py holds what needs no GPU (shapes, bytes moved, statistics, the L2 warning); timing.py times on the GPU;
text.py / json.py / markdown.py / plot.py render a :class:`plan.BenchResult`; command.py wires the CLI.
"""

"""A library's own function launching an autotuned kernel it imports (as attorch's SoftmaxAutoGrad.apply and
FlagGems' ops do): a launcher calling it names no autotuner of its own module."""
from rowsum_autotuned import _rowsum


def rowsum(x, y):
    _rowsum[(x.shape[0],)](x, y, x.shape[1], x.stride(0))

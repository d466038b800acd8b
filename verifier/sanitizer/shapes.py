"""The small (M, N) a compute-sanitizer run launches a kernel at: tails first (instrumented runs are slow)."""
from __future__ import annotations

# (rows, cols) with tails: cols not a multiple of 4 or 256, rows shorter than a warp (7), rows not a
# multiple of rows-per-block (3, 5, 7). Kernels that refuse them get the FALLBACK_N row lengths:
# multiples of 8 then of 16 (vector packs), none a multiple of 256, so a partial last block stays.
TAIL_SHAPES = ((3, 7), (5, 33), (7, 1029), (2, 772))
FALLBACK_N = (8, 776, 1032, 24, 264, 2056, 4104, 8200, 16392, 16, 272, 4112,
              384, 1152)  # whole groups of 128 (per-token-group quantizers): 3 and 9 of them, the last tile partial
MAX_SHAPES = 4
# A kernel of a few fixed row lengths (FlashInfer's merge state: head_dim 64..512 only) refuses every length above;
# it is launched at the smallest shapes of its own 'quick' cases instead, up to this many elements, rather than
# left unsanitized.
MAX_CASE_ELEMENTS = 1 << 16


def tail_shapes(spec, dt) -> list:
    """Up to MAX_SHAPES small (M, N) the kernel supports, tails first; else its own smallest case shapes."""
    shapes = [s for s in TAIL_SHAPES if spec.check_supported(*s, dt) is None]
    for n in FALLBACK_N:
        if len(shapes) >= 3:
            break
        if spec.check_supported(3, n, dt) is None:
            shapes.append((3, n))
    return shapes[:MAX_SHAPES] or case_shapes(spec, dt)


def case_shapes(spec, dt) -> list:
    """The kernel's smallest supported shapes among its 'quick' cases (odd row counts first), at most
    MAX_SHAPES of them and none over MAX_CASE_ELEMENTS."""
    from verifier.inputs.cases import cases_for

    seen = sorted({(c.M, c.N) for c in cases_for(spec, dt, "quick") if c.M * c.N <= MAX_CASE_ELEMENTS},
                  key=lambda s: (s[0] % 2 == 0, s[0] * s[1]))
    return [s for s in seen if spec.check_supported(*s, dt) is None][:MAX_SHAPES]

"""Command-line arguments shared by the subcommands (check, sanitize, lint, bench). A leaf, so that each
subcommand's module adds them without importing verifier.cli (which imports the subcommands)."""
from __future__ import annotations


def add_selection_args(parser) -> None:
    """``PATH...`` (spec files or directories) and ``--kernel GLOB``: which kernels a subcommand takes."""
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="spec file or directory of spec files (default: kernels/)")
    parser.add_argument("--kernel", action="append", metavar="GLOB",
                        help="only kernels whose name matches (repeatable)")

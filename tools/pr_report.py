#!/usr/bin/env python3
"""Render saved `verifier check` / `verifier sanitize` JSON results for a pull request.

    verifier check kernels/ --format json --output check.json
    python tools/pr_report.py --input check.json --format markdown --output comment.md
    python tools/pr_report.py --input check.json --input sanitize.json --format sarif --output verifier.sarif
    python tools/pr_report.py --input check.json --format junit --output junit.xml --changed-since origin/main

Several --input files are merged (a kernel present in more than one keeps all its findings). Paths in the
report are made relative to --root (default: the git checkout holding the working directory), and the
markdown quotes source lines from there. Exit codes: 0 report written (or, with --fail-on-findings,
1 when a kernel failed (or, with --require-values, its values were not checked), 3 when one hit an internal error,
4 when every kernel was skipped), 2 usage error.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from verifier.errors import UsageError
from verifier.report import FORMATS, render
from verifier.results.run import merge
from verifier.results.serialize import from_dict


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # exit 2 with the fix, like `verifier`
        raise UsageError(f"{self.prog}: {message}", fix=f"run `{self.prog} --help`")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="pr_report.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--input", action="append", required=True, metavar="FILE",
                   help="JSON result of `verifier check --format json` (repeatable; merged)")
    p.add_argument("--format", default="markdown", choices=FORMATS, help="default markdown")
    p.add_argument("--output", metavar="FILE", help="write here instead of stdout")
    p.add_argument("--root", metavar="DIR", help="repository root that finding paths are relative to")
    p.add_argument("--changed-since", metavar="REF",
                   help="report only the kernels whose files changed since REF (see tools/changed_kernels.py)")
    p.add_argument("--paths", nargs="+", default=["kernels"], metavar="PATH",
                   help="spec files or directories, for --changed-since (default kernels)")
    p.add_argument("--fail-on-findings", action="store_true", help="exit 1 when a reported kernel failed")
    p.add_argument("--require-values", action="store_true",
                   help="a kernel whose values were not checked (verdict unchecked or skipped) counts as failed: "
                        "with --fail-on-findings exit 1, and SARIF reports it as an error")
    return p


def load_result(path: str):
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise UsageError(f"cannot read --input {path}: {e.strerror}",
                         fix="write it first: verifier check ... --format json --output " + path) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"--input {path} is not JSON (line {e.lineno}, column {e.colno}: {e.msg})",
                         fix="pass the file written by `verifier check --format json`") from None
    try:
        return from_dict(data)
    except UsageError as e:
        raise UsageError(f"--input {path}: {e.message}", fix=e.fix) from None


def _only_changed(result, since: str, paths, root: Path):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from changed_kernels import changed_files, select

    from verifier.declare import registry

    specs = registry.load([str(root / p) for p in paths])
    names = {s.name for s, _ in select(specs, changed_files(since, root), root)}
    result.reports = [r for r in result.reports if r.spec.name in names]
    return result


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        result = merge([load_result(p) for p in args.input])
        if args.root:
            if not Path(args.root).is_dir():
                raise UsageError(f"--root {args.root} is not a directory", fix="pass the repository checkout")
            result.source_root = str(Path(args.root).resolve())
        if args.changed_since:
            from verifier.results.paths import source_root

            result = _only_changed(result, args.changed_since, args.paths, source_root(result))
        if args.require_values:
            result.options["require_values"] = True
        text = render(result, args.format)
        if args.output:
            try:
                Path(args.output).write_text(text)
            except OSError as e:
                raise UsageError(f"cannot write --output {args.output}: {e.strerror}",
                                 fix="choose a writable path") from None
        else:
            sys.stdout.write(text)
    except UsageError as e:
        sys.stderr.write(f"pr_report: error: {e}\n")
        return 2
    return result.exit_code(require_values=args.require_values) if args.fail_on_findings else 0


if __name__ == "__main__":
    sys.exit(main())

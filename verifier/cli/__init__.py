"""`verifier` command line. The library does the work; this module only wires options to it.

Exit codes: 0 every kernel passed (or is ``unchecked``: values not checked, its other checks clean), 1 findings
(``unchecked`` kernels too with --require-values), 2 usage error, 3 internal error, 4 nothing was checked (every
kernel skipped: a missing nvcc / compute-sanitizer / GPU; the reasons and fixes go to stderr).
The report goes to stdout (or --output); progress and the one-line summary go to stderr.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

from verifier.cli import preflight
from verifier.cli.args import add_selection_args
from verifier.constants import (DEFAULT_LEVEL, DEVICES, EXIT_FINDINGS, EXIT_INTERNAL,  # noqa: F401
                                EXIT_INTERRUPTED, EXIT_NOTHING_CHECKED, EXIT_OK, EXIT_TERMINATED, EXIT_USAGE)
from verifier.errors import UsageError, VerifierError
from verifier.toolchain.bytecode import keep_bytecode
from verifier.toolchain.proc import Terminated, terminate_as_interrupt

# Everything else is imported inside the command that uses it: `verifier --help` and each subcommand load only
# what they need (start-up time; none of those modules imports this one).
from verifier.results import levels

LEVEL_HELP = levels.HELP  # what each level does, from the one table (a leaf: `--help` imports nothing heavy)


class _Spelled(argparse.Action):
    """Stores the value and the spelling used (``--level`` or its older name ``--budget``), so an error names it."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        setattr(namespace, self.dest + "_flag", option_string)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's default exits 2 with usage; keep 2, add the fix
        raise UsageError(f"{self.prog}: {message}", fix=f"run `{self.prog} --help`")


def _env(name, default=None):
    return os.environ.get(f"VERIFIER_{name}", default)


# check's options that VERIFIER_<NAME> can set: name -> default (the command line wins over the environment)
_ENV_OPTIONS = {"level": DEFAULT_LEVEL, "seed": "0", "device": "auto", "format": "text", "output": None, "dtype": None,
                "case": None, "kernel_timeout": None, "jobs": "auto"}
_ENV_FLAGS = ("sanitize", "isolate", "strict", "require_values")  # VERIFIER_SANITIZE=1
_ENV_ALIASES = {"level": ("LEVEL", "BUDGET")}  # VERIFIER_BUDGET: the older name of VERIFIER_LEVEL


def _option_source(args, name: str) -> str:
    return args.sources.get(name, "--" + name.replace("_", "-"))


def _apply_environment(args) -> None:
    """Fill options not given on the command line from VERIFIER_<NAME>, remembering where each came from
    (so an error names the variable the user actually set)."""
    args.sources = {}
    for name, default in _ENV_OPTIONS.items():
        if getattr(args, name) is None:
            var = next((v for v in _ENV_ALIASES.get(name, (name.upper(),)) if _env(v) is not None), None)
            env = _env(var) if var else None
            if env is not None:
                args.sources[name] = f"VERIFIER_{var}"
            setattr(args, name, env if env is not None else default)
        elif name == "level":
            args.sources[name] = args.level_flag
    for name in _ENV_FLAGS:
        env = _env(name.upper())
        if not getattr(args, name) and env is not None:
            if env not in ("0", "1"):
                raise UsageError(f"VERIFIER_{name.upper()}={env!r} is not 0 or 1", fix=f"set VERIFIER_{name.upper()}=1 or unset it")
            setattr(args, name, env == "1")
    if not args.kernel and _env("KERNEL"):
        args.kernel = [g for g in _env("KERNEL").split(",") if g]


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="verifier", description="Correctness and race checking for GPU reduction kernels.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    c = sub.add_parser("check", help="run the check battery on kernels declared in spec files",
                       description="Run the check battery. Every option can also be set as VERIFIER_<OPTION> "
                                   "(e.g. VERIFIER_BUDGET=thorough, VERIFIER_KERNEL=softmax*,other*, "
                                   "VERIFIER_ISOLATE=1); the command line wins.")
    add_selection_args(c)
    c.add_argument("--level", "--budget", dest="level", action=_Spelled,
                   help="run level: quick | ci | thorough (default ci; --budget is its older name). " + LEVEL_HELP)
    c.add_argument("--seed", help="base seed of every random draw (default 0)")
    c.add_argument("--device", help="cpu | cuda | auto (default auto)")
    from verifier.report import FORMATS

    c.add_argument("--format", help=f"{' | '.join(FORMATS)} (default text)")
    c.add_argument("--output", metavar="FILE", help="write the report here, not stdout")
    c.add_argument("--dtype", metavar="TAG", help="only this dtype variant (as in repro lines)")
    c.add_argument("--case", metavar="NAME", help="only this input: a catalogue case, hypothesis:MxN:rngS, refusal "
                                                  "or determinism (as in repro lines)")
    c.add_argument("--sanitize", action="store_true", help="also run compute-sanitizer (GPU only)")
    c.add_argument("--isolate", action="store_true",
                   help="check each kernel in a fresh child process, not a fork of this one (default on a GPU where "
                        "this process holds CUDA); a crash or hang is a finding either way")
    c.add_argument("--kernel-timeout", metavar="SECONDS",
                   help="seconds a kernel's checks may take before they are stopped as a timeout finding, in a fork, "
                        "a child process or this one (default 600)")
    c.add_argument("-j", "--jobs", metavar="N",
                   help="kernels checked at once, each in its own process (default auto: one per CPU, capped by the "
                        "GPUs' free memory, spread over the GPUs); the report is the same at any N")
    c.add_argument("--strict", action="store_true",
                   help="warnings (e.g. spills no Expectations limit covers) count as findings: exit 1")
    c.add_argument("--require-values", action="store_true",
                   help="a kernel whose values were not checked here (verdict 'unchecked': a CUDA kernel without a "
                        "GPU is built, resource-checked and linted only; or 'skipped') fails the run: exit 1")
    c.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    c.add_argument("-v", "--verbose", action="store_true",
                   help="list every note: catalogue cases not run and why, registers/spills/stack/smem per entry")

    ls = sub.add_parser("list", help="list the kernels declared in spec files")
    add_selection_args(ls)

    cs = sub.add_parser("cases", help="list the adversarial input catalogue for an op")
    cs.add_argument("op")
    cs.add_argument("--spec", dest="specs", action="append", default=[], metavar="PATH",
                    help="spec files or directories declaring the op (for ops of your own)")
    ops = sub.add_parser("ops", help="list the ops: the bundled ones and those declared in the spec files given")
    ops.add_argument("paths", nargs="*", metavar="PATH", help="spec files or directories whose ops to list too")
    cs.add_argument("--level", "--budget", dest="level", default=DEFAULT_LEVEL, action=_Spelled,
                    help="run level whose cases to list (default ci)")
    from verifier.cli import sanitize as sanitize_command

    sanitize_command.add_subparser(sub)
    from verifier.cli import lint as lint_command

    lint_command.add_subparser(sub)
    from verifier.cli import bench as bench_command

    bench_command.add_subparser(sub)
    return p


def _default_paths(paths):
    if paths:
        return paths
    if os.path.isdir("kernels"):
        return ["kernels"]
    raise UsageError("no PATH given and no kernels/ directory here", fix="pass spec files or directories: verifier check PATH...")


def _validate(args):
    from verifier.report import FORMATS

    if args.format not in FORMATS:
        raise UsageError(f"{_option_source(args, 'format')} {args.format!r} is not a format",
                         fix=f"use one of {', '.join(FORMATS)}")
    if args.device not in DEVICES:
        raise UsageError(f"{_option_source(args, 'device')} {args.device!r} is not a device", fix="use cpu, cuda or auto")
    from verifier.results.options import check_setting

    for name, attr in (("level", "level"), ("seed", "seed"), ("timeout", "kernel_timeout"),
                       ("jobs", "jobs")):  # before any loading
        check_setting(name, getattr(args, attr), _option_source(args, attr))
    preflight.output_file(args.output, _option_source(args, "output"))


class _Progress:
    """A one-line progress bar on stderr (plain lines when stderr is not a terminal): kernels done of all, and
    the kernels running (one at -j 1, with its current step)."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.enabled = total, 0, enabled
        self.tty = sys.stderr.isatty()
        self.t0 = time.monotonic()

    def _bar(self) -> str:
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        return f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {time.monotonic() - self.t0:5.0f}s"

    def __call__(self, msg: str):
        """-j 1: '[i/n] NAME' when kernel i starts, then its steps."""
        if not self.enabled:
            return
        if msg.startswith("["):
            self.done = int(msg[1:msg.index("/")]) - 1
        line = f"{self._bar()} {msg}"
        if self.tty:
            sys.stderr.write("\r\033[K" + line[:160])
        elif msg.startswith("["):
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def kernels(self, done: int, total: int, running: list, finished=None):
        """-j N: kernels done, and those running now (verifier.isolation.parallel)."""
        if not self.enabled:
            return
        self.done, self.total = done, total
        what = f"running {len(running)}: {', '.join(running)}" if running else "running none"
        if self.tty:
            sys.stderr.write("\r\033[K" + f"{self._bar()} done, {what}"[:160])
        elif finished:
            sys.stderr.write(f"{self._bar()} done ({finished} finished); {what}\n")
        sys.stderr.flush()

    def close(self):
        if self.enabled and self.tty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def cmd_check(args) -> int:
    from verifier.declare import registry
    from verifier.gpu.probe import resolve_device
    from verifier.isolation import check_all
    from verifier.report import render
    from verifier.report.environment import environment
    from verifier.results.options import Options, check_setting
    from verifier.results.run import (Result, not_checked, nothing_checked_message, require_values_message,
                                      verdict_counts)

    _apply_environment(args)
    _validate(args)
    device = resolve_device(args.device)
    if device == "cpu":  # before the spec files load: Triton kernels a library decorates at import, interpreted
        from verifier.launch.triton import prefer_interpreter

        prefer_interpreter()
    specs = registry.load(_default_paths(args.paths), args.kernel)
    preflight.build_cache(specs)
    preflight.triton_cache(specs, device)
    opts = Options.from_settings(
        {"level": args.level, "seed": args.seed, "device": device, "case": args.case, "dtype": args.dtype,
         "sanitize": args.sanitize, "timeout": args.kernel_timeout},
        {name: _option_source(args, name) for name in ("level", "seed", "case", "dtype")}
        | {"timeout": _option_source(args, "kernel_timeout")})
    progress = _Progress(len(specs), enabled=not args.no_progress)
    if device == "cpu" and args.device == "auto":
        sys.stderr.write("verifier: no CUDA GPU; running on the CPU: Triton kernels in the interpreter, callables on "
                         "CPU tensors, CUDA kernels built and resource-checked only (their launches are skipped).\n")
    try:
        reports = check_all(specs, opts, progress=progress, isolate=True if args.isolate else None,
                            jobs=check_setting("jobs", args.jobs, _option_source(args, "jobs")))
    finally:
        progress.close()
    result = Result(reports=reports, environment=environment(),
                    options={"level": opts.level, "budget": opts.level, "seed": opts.seed, "device": opts.device,
                             "verbose": bool(args.verbose), "require_values": bool(args.require_values)})
    text = render(result, args.format)
    from verifier.report import write

    write(text, args.output)
    s = result.summary()
    warned = f" ({s['warnings']} warnings{'' if args.strict else '; --strict fails on them'})" if s["warnings"] else ""
    sys.stderr.write(f"verifier: {s['kernels']} kernels, {verdict_counts(result)}, {s['findings']} findings{warned}\n")
    for r in result.reports:
        if r.internal_error:
            sys.stderr.write(f"verifier: internal error while checking {r.name}: {r.error.splitlines()[0]}\n"
                             "  this is a bug in kernel-verifier (the message names where it was raised); the other "
                             "kernels were checked\n")
    if result.exit_code() == EXIT_NOTHING_CHECKED:
        sys.stderr.write(nothing_checked_message(result))
    elif args.require_values and not_checked(result):
        sys.stderr.write(require_values_message(result))
    return result.exit_code(strict=args.strict, require_values=args.require_values)


def cmd_list(args) -> int:
    from verifier.declare import registry

    for k in registry.load(_default_paths(args.paths), args.kernel):
        print(f"{k.name:40s} {k.kind:8s} {k.op:18s} {','.join(d.tag for d in k.dtypes):30s} {k.math_mode}")
    return EXIT_OK


def cmd_cases(args) -> int:
    from verifier.declare import registry
    from verifier.inputs import catalogue as inputs
    from verifier.ops import get_op

    if args.specs:
        registry.load(args.specs, None)  # their ops join the registry
    get_op(args.op)
    levels.level(args.level)
    cases = inputs.catalogue(args.op, level=args.level)
    if levels.level(args.level).large_index:  # at their default row lengths (each kernel's: verifier.inputs.cases)
        from verifier.inputs.large_family import large_cases

        cases += large_cases(args.level)
    for c in cases:
        print(f"{c.name:28s} {c.M:>6d} x {c.N:<7d} {c.exposes}")
    return EXIT_OK


def cmd_ops(args) -> int:
    from verifier.declare import registry
    from verifier.ops import BUNDLED, OPS

    if args.paths:
        registry.load(args.paths, None)  # their ops join the registry
    for op in OPS.values():
        params = ", ".join(f"{k}={v!r}" for k, v in op.params.items()) or "-"
        budget = "derived from the reference" if op.derived else "hand-derived error model"
        where = "bundled" if any(b is op for b in BUNDLED) else f"declared at {op.origin}"
        print(f"{op.name}: {op.signature()}")
        if op.optional:
            print(f"    optional inputs (a param of the same name takes them): {op.optional_signature()}")
        if set(op.optional_outputs) - set(op.outputs):
            print(f"    optional outputs (a param of the same name, True, writes them): {op.optional_output_signature()}")
        if set(op.optional_outputs) & set(op.outputs):
            print(f"    outputs a kernel may leave out (a param of the same name, False): "
                  f"{op.optional_output_signature(present=True)}")
        print(f"    params: {params}; budget: {budget}; invariants: "
              f"{len(op.invariants) if isinstance(op.invariants, (list, tuple)) else 'yes' if op.invariants else 'none'}"
              f"; own cases: {len(op.cases)}; {where}")
    return EXIT_OK


def main(argv=None) -> int:
    keep_bytecode()  # verifier/toolchain/bytecode.py: its children start often
    parser = build_parser()
    try:
        terminate_as_interrupt()  # SIGTERM (a CI job cancelled) cleans up as Ctrl-C does: exit 143
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        from verifier.launch import warn_retired_env

        warn_retired_env()
        from verifier.cli import bench as bench_command
        from verifier.cli import lint as lint_command
        from verifier.cli import sanitize as sanitize_command

        commands = {"check": cmd_check, "list": cmd_list, "cases": cmd_cases, "ops": cmd_ops, "sanitize": sanitize_command.run,
                    "lint": lint_command.run, "bench": bench_command.run}
        return commands[args.command](args)
    except UsageError as e:
        sys.stderr.write(f"verifier: error: {e}\n")
        return EXIT_USAGE
    except VerifierError as e:
        sys.stderr.write(f"verifier: {type(e).__name__}: {e}\n")
        return e.exit_code
    except Terminated:
        sys.stderr.write("verifier: terminated (SIGTERM); children killed, temporary files removed\n")
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        sys.stderr.write("verifier: interrupted\n")
        return EXIT_INTERRUPTED
    except Exception as e:  # a bug in the verifier, not in the user's input
        if os.environ.get("VERIFIER_DEBUG"):
            traceback.print_exc()
        sys.stderr.write(f"verifier: internal error: {type(e).__name__}: {e}\n"
                         "  this is a bug in kernel-verifier; rerun with VERIFIER_DEBUG=1 for the traceback\n")
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())

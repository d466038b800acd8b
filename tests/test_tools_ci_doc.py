"""docs/ci.md's workflow must keep calling the tools with options they accept."""
import re
import shlex
import sys
from pathlib import Path

import pytest

from verifier.cli import build_parser as verifier_parser
from verifier.report import FORMATS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import changed_kernels  # noqa: E402
import pr_report  # noqa: E402

DOC = (ROOT / "docs" / "ci.md").read_text()
WORKFLOW = re.search(r"```yaml\n(.+?)\n```", DOC, re.S).group(1)
BRANCH = {'"origin/${{ github.base_ref }}"': "origin/main"}


def _commands(prefix: str, args: str = "") -> list[list[str]]:
    """The workflow's command lines starting with ``prefix``, with ``args`` for the shell's "$@"."""
    out = []
    for line in WORKFLOW.splitlines():
        line = line.strip()
        if line.startswith(prefix):
            for k, v in {**BRANCH, '"$@"': args}.items():
                line = line.replace(k, v)
            out.append(shlex.split(line.split(" > ")[0]))
    return out


def test_the_workflow_uses_every_report_and_the_actions_named_in_the_brief():
    assert "github/codeql-action/upload-sarif" in WORKFLOW and "sticky-pull-request-comment" in WORKFLOW
    for fmt in ("markdown", "sarif", "junit"):
        assert f"--format {fmt}" in WORKFLOW
    assert "fetch-depth: 0" in WORKFLOW


def test_pr_report_accepts_the_workflow_options():
    cmds = _commands("python tools/pr_report.py", "--input check.json --input sanitize.json")
    assert len(cmds) == 3
    for cmd in cmds:
        args = pr_report.build_parser().parse_args(cmd[2:])
        assert args.format in FORMATS


def test_changed_kernels_accepts_the_workflow_options():
    (cmd,) = _commands("python tools/changed_kernels.py")
    assert changed_kernels.build_parser().parse_args(cmd[2:]).since == "origin/main"


@pytest.mark.parametrize("sub", ["check", "sanitize"])
def test_verifier_accepts_the_workflow_options(sub):
    cmds = _commands(f"verifier {sub} ", "kernels/ --kernel cuda-softmax-s1")
    assert len(cmds) == 1
    parser = verifier_parser()
    subcommands = next(a for a in parser._actions if a.dest == "command").choices
    assert sub in subcommands, f"docs/ci.md runs `verifier {sub}`, which is not a command of verifier"
    args = parser.parse_args(cmds[0][1:])
    assert args.format in FORMATS

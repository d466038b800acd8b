"""README.md's two commands and .ci/run must not drift apart."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Two commands for a fresh machine", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section, re.S)


def test_readme_has_exactly_two_commands():
    cmds = _readme_commands()
    assert len(cmds) == 2, cmds
    assert cmds[0].rstrip().endswith("verifier check kernels/")
    assert cmds[1].rstrip().endswith("pytest -n auto")


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _readme_commands()[1].strip() in [line.strip() for line in ci]


def test_torch_is_pinned_to_the_cpu_build():
    # A bare `torch` would pull a multi-GB CUDA build onto CI machines.
    for cmd in _readme_commands():
        assert "torch==2.13.0" in cmd

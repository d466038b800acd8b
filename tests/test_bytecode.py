"""verifier.toolchain.bytecode: where PYTHONDONTWRITEBYTECODE is set, bytecode goes to verifier's pycache (never beside the
sources), for this process and its children; VERIFIER_PYCACHE=0, a prefix already set, or installed packages that carry
their own bytecode leave it as it is. The heavy package deciding it is a stand-in (mod_kv_heavy) in each test."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path, env_extra, code):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "VERIFIER_PYCACHE")}
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path / "xdg"), **env_extra)
    (tmp_path / "mod_kv_bc.py").write_text("X = 1\n")
    if not (tmp_path / "mod_kv_heavy").exists():
        (tmp_path / "mod_kv_heavy").mkdir()
        (tmp_path / "mod_kv_heavy" / "__init__.py").write_text("Y = 2\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


CODE = ("import sys, os, subprocess; from verifier.toolchain import bytecode; bytecode.HEAVY = ('mod_kv_heavy',); "
        "print(bytecode.keep_bytecode()); "
        "import mod_kv_bc; print(sys.dont_write_bytecode); "
        "print(subprocess.run([sys.executable, '-c', 'import sys; print(sys.pycache_prefix)'], "
        "capture_output=True, text=True).stdout.strip())")


def test_bytecode_goes_to_the_cache_here_and_in_children_never_beside_the_sources(tmp_path):
    prefix, dont, child = _run(tmp_path, {}, CODE)
    assert prefix == str(tmp_path / "xdg" / "kernel-verifier" / "pycache") and dont == "False" and child == prefix
    assert list(Path(prefix).rglob("mod_kv_bc*.pyc"))  # the module imported after the call was cached there
    assert not (tmp_path / "__pycache__").exists()


def test_variable_moves_it_or_turns_it_off(tmp_path):
    where = tmp_path / "mine"
    prefix, _, child = _run(tmp_path, {"VERIFIER_PYCACHE": str(where)}, CODE)
    assert prefix == child == str(where)
    off = _run(tmp_path, {"VERIFIER_PYCACHE": "0"}, CODE)
    assert off[:2] == ["None", "True"] and off[2] == "None"
    assert not (tmp_path / "__pycache__").exists()


def test_installed_bytecode_is_used_as_it_is(tmp_path):
    """pip compiles a package's bytecode beside its sources at install: a prefix would make Python ignore it and
    compile the package again, so the setting is left as it is (verifier's own modules then compile at each start)."""
    import py_compile

    _run(tmp_path, {"VERIFIER_PYCACHE": "0"}, "pass")  # writes the stand-in package
    init = tmp_path / "mod_kv_heavy" / "__init__.py"
    py_compile.compile(str(init), cfile=str(tmp_path / "mod_kv_heavy" / "__pycache__" /
                                            f"__init__.{sys.implementation.cache_tag}.pyc"))
    kept = _run(tmp_path, {}, CODE)
    assert kept[:2] == ["None", "True"] and kept[2] == "None"
    assert not (tmp_path / "xdg").exists()
    assert not (tmp_path / "__pycache__").exists()

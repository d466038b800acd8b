"""verifier.toolchain.bytecode: where PYTHONDONTWRITEBYTECODE is set, bytecode goes to verifier's pycache (never beside the
sources), for this process and its children; VERIFIER_PYCACHE=0 or a prefix already set leave it as it is."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path, env_extra, code):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "VERIFIER_PYCACHE")}
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path / "xdg"), **env_extra)
    (tmp_path / "mod_kv_bc.py").write_text("X = 1\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


CODE = ("import sys, os, subprocess; from verifier.toolchain.bytecode import keep_bytecode; print(keep_bytecode()); "
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


def test_a_new_cache_starts_with_the_installations_own_bytecode(tmp_path, monkeypatch):
    """pip compiles a package's bytecode beside its sources at install; with a prefix Python reads bytecode only
    there, so the prefix is seeded with it (linked) and Python uses it as it is, compiling nothing again."""
    import py_compile

    from verifier.toolchain import bytecode

    site = tmp_path / "site"
    (site / "pkg_kv_seed" / "tests").mkdir(parents=True)
    init = site / "pkg_kv_seed" / "__init__.py"
    init.write_text("VALUE = 3\n")
    (site / "pkg_kv_seed" / "tests" / "t.py").write_text("")
    tag = sys.implementation.cache_tag
    pyc = site / "pkg_kv_seed" / "__pycache__" / f"__init__.{tag}.pyc"
    py_compile.compile(str(init), cfile=str(pyc))
    py_compile.compile(str(site / "pkg_kv_seed" / "tests" / "t.py"))  # a test suite's: not seeded
    monkeypatch.setattr(bytecode, "_installation_dirs", lambda: [str(site)])
    prefix = tmp_path / "prefix"
    assert bytecode.seed_from_installation(str(prefix)) == 1
    seeded = prefix / str(site / "pkg_kv_seed").lstrip(os.sep) / f"__init__.{tag}.pyc"
    assert seeded.read_bytes() == pyc.read_bytes()
    assert bytecode.seed_from_installation(str(prefix)) == 0  # once a prefix and interpreter

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
    env.update(PYTHONPYCACHEPREFIX=str(prefix), PYTHONPATH=str(site))
    before = seeded.stat().st_mtime_ns
    p = subprocess.run([sys.executable, "-c", "import pkg_kv_seed; print(pkg_kv_seed.VALUE)"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "3", p.stderr
    assert seeded.stat().st_mtime_ns == before  # read as it was, not compiled again
    assert list((prefix / str(site).lstrip(os.sep)).rglob("*.pyc")) == [seeded]  # (the stdlib's compile there)


def test_where_links_fail_the_bytecode_is_copied(tmp_path, monkeypatch):
    from verifier.toolchain import bytecode

    site = tmp_path / "site" / "pkg_kv_copy"
    (site / "__pycache__").mkdir(parents=True)
    pyc = site / "__pycache__" / f"__init__.{sys.implementation.cache_tag}.pyc"
    pyc.write_bytes(b"not really bytecode")

    def no_links(src, dst):
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(bytecode, "_installation_dirs", lambda: [str(tmp_path / "site")])
    monkeypatch.setattr(bytecode.os, "link", no_links)
    prefix = tmp_path / "prefix"
    assert bytecode.seed_from_installation(str(prefix)) == 1
    copied = prefix / str(site).lstrip(os.sep) / pyc.name
    assert copied.read_bytes() == pyc.read_bytes() and copied.stat().st_ino != pyc.stat().st_ino
    assert not list(prefix.rglob("*.tmp"))

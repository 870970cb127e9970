"""nr-llm as people install it: ``python -m build``, ``twine check``, a fresh venv outside the
clone, ``nr-llm demo``, and a scaffolded tool package installed against the built wheel.

These tests build the real sdist and wheel with build isolation (setuptools comes from the
package index, as on a user's machine) and never import the clone: every command runs in a
temporary directory with a clean environment, so a file that is missing from the wheel, or an
import that only works from the repository root, fails here.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from nr_llm_core.cli.new_tool import scaffold
from tests.kit.fresh_env import ROOT, Venv

pytestmark = pytest.mark.slow


def _venv(path: Path) -> Venv:
    proc = subprocess.run(
        [sys.executable, "-m", "venv", str(path)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return Venv(path)


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist, and the wheel built from the sdist (``python -m build`` without flags, as a
    release is built): a wheel built from the checkout itself would also pick up whatever an
    earlier in-tree build left in ``build/lib``."""
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    (wheel,) = out.glob("nr_llm-*.whl")
    (sdist,) = out.glob("nr_llm-*.tar.gz")
    log = out / "build.log"
    log.write_text(proc.stdout + proc.stderr)
    return {"wheel": wheel, "sdist": sdist, "dir": out, "log": log}


def test_the_build_leaves_nothing_out_in_silence(dists: dict[str, Path]) -> None:
    """setuptools warns when a folder of package data is not a listed package ("Package
    would be ignored"): a newcomer who builds the wheel reads that as broken, and a later
    setuptools drops the files. The build must not warn of it."""
    log = dists["log"].read_text()
    assert "would be ignored" not in log, log[-4000:]
    assert "is absent from the `packages` configuration" not in log, log[-4000:]


@pytest.fixture(scope="module")
def installed(dists: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A fresh venv with only the built wheel (and its dependencies from the index)."""
    venv = _venv(tmp_path_factory.mktemp("wheel-venv") / "env")
    venv.pip_install(dists["wheel"])
    return venv


def test_twine_check_passes_for_the_sdist_and_the_wheel(dists: dict[str, Path]) -> None:
    """The metadata (long description, classifiers, license) is what an index accepts."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "twine",
            "check",
            "--strict",
            str(dists["wheel"]),
            str(dists["sdist"]),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("PASSED") == 2


def test_the_wheel_holds_every_module_and_squats_no_generic_top_level_name(
    dists: dict[str, Path],
) -> None:
    """Every package of the source tree is in the wheel (a subpackage left out of the package
    list would only fail at import time on a user's machine), the builtins are installed under
    the namespaced name ``nr_llm_builtins``, and nothing else claims a top-level name."""
    names = zipfile.ZipFile(dists["wheel"]).namelist()
    top = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    assert top == {"nr_llm_core", "nr_llm_builtins"}
    for source, installed_as in (
        ("nr_llm_core", "nr_llm_core"),
        ("builtin_tools", "nr_llm_builtins"),
    ):
        for path in (ROOT / source).rglob("*.py"):
            rel = path.relative_to(ROOT / source).as_posix()
            assert f"{installed_as}/{rel}" in names, f"{source}/{rel} is missing from the wheel"
    for data in ("nr_llm_core/py.typed", "nr_llm_builtins/py.typed"):
        assert data in names
    for static in (ROOT / "nr_llm_core" / "playground" / "static").iterdir():
        assert f"nr_llm_core/playground/static/{static.name}" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(dists["wheel"]).read(entry_points).decode()
    assert "builtin_tools" not in text
    assert "nr_llm_builtins.records:ListTables" in text


def test_the_sdist_holds_the_sources_the_wheel_is_built_from(dists: dict[str, Path]) -> None:
    """A wheel built from the sdist alone (what pip does without a wheel) has the same files."""
    with tarfile.open(dists["sdist"]) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    for required in ("pyproject.toml", "README.md", "LICENSE", "builtin_tools/records.py"):
        assert required in members, required
    assert "nr_llm_core/playground/static/app.js" in members


def test_a_fresh_venv_outside_the_clone_runs_the_demo(installed: Venv, tmp_path: Path) -> None:
    """The README's first command, but from the wheel: the demo runs on the embedded defaults
    (SQLite, the scripted provider, the builtin tools found by their entry points)."""
    work = tmp_path / "elsewhere"
    work.mkdir()
    ran = installed.run(installed.bin / "nr-llm", "demo", cwd=work)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "completed after" in ran.stdout
    assert (work / ".nr-llm" / "audit.db").is_file()
    probe = installed.run(
        installed.python,
        "-c",
        "import importlib.util as u, nr_llm_core, nr_llm_builtins;"
        "print(u.find_spec('builtin_tools') is None, nr_llm_core.__file__)",
        cwd=work,
    )
    assert probe.returncode == 0, probe.stderr
    is_absent, where = probe.stdout.split()
    assert is_absent == "True"
    assert str(ROOT) not in where  # the wheel's copy, not the clone


def test_a_scaffolded_tool_installs_against_the_built_wheel_and_passes_its_tests(
    dists: dict[str, Path], tmp_path: Path
) -> None:
    """``nr-llm new-tool``'s package depends on ``nr-llm``, which is not on PyPI: the
    scaffold's README installs nr-llm's wheel first, so that pip finds the dependency installed
    and never looks the name up on an index (``--find-links``, which it said before, still asks
    the index and takes a higher version published there by anyone). In a venv with nothing
    installed, the README's two commands install it and the scaffold's own tests pass."""
    venv = _venv(tmp_path / "env")
    root = scaffold("word_tally", tmp_path)
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert "pip install /path/to/nr-llm/dist/nr_llm-*.whl\npip install -e '.[test]'" in readme
    assert "--find-links" not in readme
    venv.pip_install(str(dists["wheel"]))
    venv.pip_install("-e", f"{root}[test]")
    tests = venv.run(venv.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=root)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "3 passed" in tests.stdout
    ran = venv.run(venv.bin / "nr-llm", "tools", "run", "word_tally", "--args", '{"text": "a b a"}')
    assert ran.returncode == 0, ran.stderr
    assert "3 words, 2 distinct" in ran.stdout

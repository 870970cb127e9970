"""The documentation: every example runs, the site builds strictly, the nav is whole."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path
from typing import Any

import pytest

from .docs_examples import DOCS, NOT_RUN, REQUIRES, ROOT, Block, blocks, pages
from .fresh_env import Venv

#: python runs, sh runs in a fresh environment, toml and json are parsed; text is output shown
#: to the reader (a transcript), not an example to run.
LANGUAGES = {"python", "sh", "toml", "json", "text"}


def _pages_with(language: str) -> list[Path]:
    return [p for p in pages() if any(b.language == language for b in blocks(p))]


def _id(page: Path) -> str:
    return str(page.relative_to(DOCS))


def test_every_code_block_has_a_language_the_suite_executes() -> None:
    found = [(b.where, b.language) for p in pages() for b in blocks(p)]
    assert found, "no code blocks found"
    assert [f for f in found if f[1] not in LANGUAGES] == []


def _run_block(block: Block, namespace: dict[str, Any]) -> None:
    first = block.code.lstrip().split("\n", 1)[0]
    code = compile(block.code, block.where, "exec", dont_inherit=True)
    if first.startswith(NOT_RUN):
        return
    if first.startswith(REQUIRES):
        module = first.removeprefix(REQUIRES).strip()
        if importlib.util.find_spec(module) is None:
            return  # compiled above; the test extra installs it, so CI runs it
    with warnings.catch_warnings():
        # Starlette's TestClient asks for its httpx successor; the example is about nr-llm.
        warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
        exec(code, namespace)


@pytest.mark.parametrize("page", _pages_with("python"), ids=_id)
def test_python_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One namespace per page: later blocks build on earlier ones, as a reader's session would.
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    for block in blocks(page):
        if block.language == "python":
            _run_block(block, namespace)


def test_not_run_blocks_say_why() -> None:
    for page in pages():
        for block in blocks(page):
            first = block.code.lstrip().split("\n", 1)[0]
            if first.startswith(NOT_RUN):
                assert first.removeprefix(NOT_RUN).strip(), block.where


@pytest.mark.parametrize("page", _pages_with("toml") + _pages_with("json"), ids=_id)
def test_toml_and_json_examples_parse(page: Path) -> None:
    for block in blocks(page):
        if block.language == "toml":
            tomllib.loads(block.code)
        elif block.language == "json":
            json.loads(block.code)


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages_with("sh"), ids=_id)
def test_shell_examples_run_in_a_fresh_environment(
    page: Path, fresh_venv: Venv, tmp_path: Path
) -> None:
    # The page's shell blocks, literally, one after another in one shell, in an empty
    # directory, with the fresh environment first on PATH (as after `source .venv/bin/activate`).
    script = "\n".join(b.code for b in blocks(page) if b.language == "sh")
    ran = fresh_venv.run("bash", "-euo", "pipefail", "-c", script, cwd=tmp_path)
    assert ran.returncode == 0, f"{script}\n--- stdout\n{ran.stdout}\n--- stderr\n{ran.stderr}"


def test_getting_started_runs_the_scaffold_as_generated() -> None:
    # The page shows the generated tool; it must be the template's code, not a paraphrase.
    from nr_llm_core.cli._templates import TOOL

    page = (DOCS / "getting-started.md").read_text()
    assert "nr-llm new-tool word_count" in page
    body = TOOL.replace("$name", "word_count")
    for line in (
        "words = Counter(text.split())",
        'f"{sum(words.values())} words, {len(words)} distinct",',
    ):
        assert line in body and line in page


def _nav_files() -> list[str]:
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text[text.index("\nnav:") : text.index("\nplugins:")]
    return re.findall(r"([\w./-]+\.md)\s*$", nav, re.MULTILINE)


def test_the_nav_names_every_page_and_every_named_page_exists() -> None:
    named = _nav_files()
    assert len(named) == len(set(named))
    missing = [n for n in named if not (DOCS / n).is_file()]
    assert missing == []
    on_disk = {str(p.relative_to(DOCS)) for p in pages()}
    assert sorted(on_disk - set(named)) == []


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    # mkdocs is in the test extra: missing, this test fails rather than skips.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    site = tmp_path / "site"
    reference = (site / "reference" / "tools" / "index.html").read_text()
    assert 'id="nr_llm_core.decorator.tool"' in reference
    assert 'id="nr_llm_core.hooks.ToolHookSpec.execute"' in reference
    _assert_roles_became_links(site)


#: What an unrendered Sphinx role looks like in HTML (``:class:`X``` becomes ``:class:<code>X``).
_RAW_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|data|mod|attr|exc|obj|const):")
_LINK = re.compile(r'<a class="autorefs autorefs-internal"[^>]*href="([^"]+)"')


def _assert_roles_became_links(site: Path) -> None:
    """The API reference shows no raw Sphinx role, and the roles became links (ADR 0021)."""
    pages = sorted((site / "reference").glob("*/index.html"))
    assert len(pages) == len(list((DOCS / "reference").glob("*.md"))) - 1  # index.md is flat
    links: dict[str, list[str]] = {}
    for page in pages:
        text = page.read_text()
        assert _RAW_ROLE.findall(text) == [], page
        links[page.parent.name] = _LINK.findall(text)
    # Known roles, each a link to its target's anchor: the seam from ToolHost's docstring, a
    # class on another page, a module constant (a :data: role in nr_llm_core.testing).
    assert "#nr_llm_core.host.ToolHost.invoke" in links["host"]
    assert "../results/#nr_llm_core.results.ToolResult" in links["host"]
    assert "../results/#nr_llm_core.bounding.MAX_CONTENT_BYTES" in links["testing"]
    assert sum(len(found) for found in links.values()) >= 50

"""The page's own files: no markup sinks, no inline code, nothing from elsewhere."""

from __future__ import annotations

import re
from importlib.resources import files

import pytest

from nr_llm_core.playground.app import _STATIC

STATIC = files("nr_llm_core.playground").joinpath("static")


def _read(name: str) -> str:
    return STATIC.joinpath(name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", [n for n in sorted(_STATIC) if n.endswith(".js")])
def test_the_scripts_never_parse_markup(name: str) -> None:
    script = _read(name)
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        'setAttribute("on',
        "DOMParser",
        "createContextualFragment",
        ".src =",
        ".href =",
    ):
        assert sink not in script, sink


def test_the_page_has_no_inline_script_or_style() -> None:
    page = _read("index.html")
    assert re.findall(r"<script\b[^>]*>", page) == [
        '<script src="/static/render.js?token={{token}}" defer>',
        '<script src="/static/app.js?token={{token}}" defer>',
    ]
    assert "<style" not in page
    assert not re.search(r"\sstyle=", page)
    assert not re.search(r"\son[a-z]+=", page)


@pytest.mark.parametrize("name", sorted(_STATIC))
def test_nothing_is_loaded_from_elsewhere(name: str) -> None:
    text = _read(name)
    assert not re.search(
        r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text.replace("http://www.w3.org/2000/svg", "")
    )
    assert "@import" not in text and "url(" not in text


def test_every_static_file_is_served() -> None:
    names = {p.name for p in STATIC.iterdir()}
    assert names == {*_STATIC, "index.html"}
